"""The torch path (CPU default): paged attention that never pads, zero-fills or masks garbage.

How it stays close to contiguous attention (measured in ``benchmarks/kernels.py``):

* Each sequence gathers **only its own pages**, a chunk at a time, with
  ``index_select(..., out=workspace)`` into one reused buffer of ``CHUNK_BYTES``. The chunk
  stays in the last-level cache, so the matmuls that follow read it from cache rather than
  DRAM, and reusing the buffer avoids paying page faults for a fresh allocation per call.
* The token range is **sliced** (``[:seq_len]``), never masked, so garbage or NaN in the
  unused slots of the last page is never read; only the causal diagonal of an extend block is
  masked, and there every masked slot holds a real token (``0 * finite``, not ``0 * NaN``).
* Chunks are combined with the online-softmax rule (running max, sum, accumulator), the same
  algebra as the Triton split-KV reduce.
* GQA without repeating K/V: the ``group`` query heads of one KV head become rows of one
  batched matmul over ``[num_kv_heads, rows, head_dim]``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from kvproof.kernels.layout import PoolShape

# 4 MiB of K (and 4 MiB of V) per chunk: 1,024 tokens of 8 heads x 128 fp32. On the 2-core
# EPYC dev box 1-8 MiB chunks ran 1.5-2x faster than gathering the whole sequence at once
# (which spills the gathered copy to DRAM and reads it back); smaller chunks pay per-op
# overhead. Re-measure with benchmarks/kernels.py before changing.
CHUNK_BYTES = 4 << 20
# Cap on one block of fp32 scores in extend: [num_q_heads, query_block, chunk_tokens].
SCORE_BYTES = 8 << 20
_NEG_BIG = torch.finfo(torch.float32).min


@dataclass(frozen=True)
class _Workspace:
    """Gather buffer for one chunk of pages (K and V), reused across sequences, chunks and
    calls.

    Reuse across calls matters on CPU: a fresh multi-MiB buffer is mmap'ed and its page
    faults cost more than the gather itself (a 1k-token decode: 5 ms fresh, 1 ms reused).
    """

    kv: torch.Tensor  # flat, room for [2, chunk_pages, page_size, H, D] in the pool's dtype
    kv32: torch.Tensor | None  # flat fp32 room for the same, when the pool is fp16/bf16
    chunk_pages: int


_cache = threading.local()  # per thread: concurrent calls must not share scratch buffers


def _workspace(kv_pool: torch.Tensor, shape: PoolShape, max_pages: int) -> _Workspace:
    """A workspace big enough for ``min(max_pages, CHUNK_BYTES)`` worth of pages."""
    page_bytes = shape.page_size * shape.bytes_per_token * kv_pool.element_size()
    chunk_pages = max(1, min(max_pages, CHUNK_BYTES // page_bytes))
    # One per inference mode: the engine decodes under ``torch.inference_mode``, where an
    # inference tensor's views skip autograd's view tracking (a normal tensor's cost 1.1 %
    # more decode instructions), and outside it an inference tensor cannot be written.
    inference = torch.is_inference_mode_enabled()
    key = (kv_pool.device, kv_pool.dtype, tuple(kv_pool.shape[2:]), inference)
    store: dict[tuple[object, ...], _Workspace] = _cache.__dict__.setdefault("ws", {})
    ws = store.get(key)
    if ws is None or ws.chunk_pages < chunk_pages:
        numel = 2 * chunk_pages * shape.page_size * shape.bytes_per_token
        dev = kv_pool.device
        wide = kv_pool.dtype != torch.float32
        ws = _Workspace(
            kv=torch.empty(numel, dtype=kv_pool.dtype, device=dev),
            kv32=torch.empty(numel, dtype=torch.float32, device=dev) if wide else None,
            chunk_pages=chunk_pages,
        )
        store[key] = ws
    return _Workspace(ws.kv, ws.kv32, chunk_pages)


@dataclass
class _Running:
    """Online-softmax state of one query block: running max, sum and unnormalised output."""

    m: torch.Tensor | None = None  # [H_kv, rows, 1]
    s: torch.Tensor | None = None  # [H_kv, rows, 1]
    acc: torch.Tensor | None = None  # [H_kv, rows, D]

    def add(self, m: torch.Tensor, s: torch.Tensor, acc: torch.Tensor) -> None:
        if self.m is None or self.s is None or self.acc is None:
            self.m, self.s, self.acc = m, s, acc
            return
        m_new = torch.maximum(self.m, m)
        old, new = torch.exp(self.m - m_new), torch.exp(m - m_new)
        self.acc = self.acc.mul_(old).add_(acc.mul_(new))
        self.s = self.s.mul_(old).add_(s.mul_(new))
        self.m = m_new

    def result(self) -> torch.Tensor:
        assert self.acc is not None and self.s is not None
        return self.acc / self.s


def _gather(
    kv_pool: torch.Tensor, pages: torch.Tensor, t0: int, t1: int, work: _Workspace
) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V of tokens ``[t0, t1)`` (``t0`` on a page boundary) as ``[t1 - t0, H, D]``
    fp32 views of the workspace; the tail of the last page is sliced off, never read.

    One ``index_select`` over dim 0 of the pool seen as ``[2 * num_pages, ...]`` (K pages,
    then V pages): one thread-pool barrier instead of two, and unlike a select over dim 1
    it splits across threads (2 threads: 0.45 vs 0.9 ms for 64 pages of 64 KiB).
    """
    page_size, num_pages = kv_pool.shape[2], kv_pool.shape[1]
    ids = pages[t0 // page_size : (t1 + page_size - 1) // page_size]
    n = ids.shape[0]
    dims = (2, n, *kv_pool.shape[2:])
    buf = work.kv[: 2 * n * kv_pool[0, 0].numel()]
    if kv_pool.stride(0) == num_pages * kv_pool.stride(1):  # K and V halves stack as rows
        both = torch.cat((ids, ids + num_pages))
        kv = torch.index_select(kv_pool.flatten(0, 1), 0, both, out=buf.view(2 * n, *dims[2:]))
        kv = kv.view(dims)
    else:
        kv = torch.index_select(kv_pool, 1, ids, out=buf.view(dims))
    if work.kv32 is not None:  # fp16/bf16: the math runs in fp32
        kv = work.kv32[: buf.numel()].view(dims).copy_(kv)
    kv = kv.flatten(1, 2)[:, : t1 - t0]
    return kv[0], kv[1]


def _scores(qh: torch.Tensor, k: torch.Tensor, first_pos: int, rows: int, t0: int) -> torch.Tensor:
    """``q . k`` as ``[H_kv, packed, T]``, with keys after a row's position set to -inf."""
    scores = torch.matmul(qh, k.permute(1, 2, 0))
    t1 = t0 + k.shape[0]
    if t1 - 1 > first_pos:  # the chunk crosses the causal diagonal of this block
        q_pos = torch.arange(first_pos, first_pos + rows, device=qh.device)
        key_pos = torch.arange(t0, t1, device=qh.device)
        hidden = (key_pos[None, :] > q_pos[:, None]).repeat(qh.shape[1] // rows, 1)
        scores.masked_fill_(hidden, float("-inf"))
    return scores


def _attend_block(
    qh: torch.Tensor,
    first_pos: int,
    rows: int,
    kv_pool: torch.Tensor,
    pages: torch.Tensor,
    kv_hi: int,
    work: _Workspace,
) -> torch.Tensor:
    """Attention of one block of queries over tokens ``[0, kv_hi)`` of one sequence's pages.

    ``qh``: scaled fp32 queries ``[H_kv, group * rows, D]`` of ``rows`` consecutive tokens,
    the first at position ``first_pos``. Returns ``[H_kv, group * rows, D]``.
    """
    page_size = kv_pool.shape[2]
    # equal chunks, each at most the workspace: 1,100 tokens is 2 x 550, not 1,024 + 76
    num_chunks = -(-kv_hi // (work.chunk_pages * page_size))
    chunk = -(-kv_hi // num_chunks)
    chunk = -(-chunk // page_size) * page_size
    if num_chunks == 1:
        # One chunk: a fused softmax, 3 ops instead of the 6 of the online rule (fewer
        # thread-pool barriers per sequence). Position 0 is visible to every row, so no
        # row is fully masked and softmax never sees an all -inf row.
        k, v = _gather(kv_pool, pages, 0, kv_hi, work)
        probs = torch.softmax(_scores(qh, k, first_pos, rows, 0), dim=-1)
        return torch.matmul(probs, v.permute(1, 0, 2))
    state = _Running()
    for t0 in range(0, kv_hi, chunk):
        k, v = _gather(kv_pool, pages, t0, min(t0 + chunk, kv_hi), work)
        scores = _scores(qh, k, first_pos, rows, t0)
        # A row fully masked in this chunk has max -inf; clamping keeps exp() at 0, not NaN.
        m = scores.amax(dim=-1, keepdim=True).clamp_min_(_NEG_BIG)
        probs = scores.sub_(m).exp_()
        state.add(m, probs.sum(dim=-1, keepdim=True), torch.matmul(probs, v.permute(1, 0, 2)))
    return state.result()


def _attend_sequence(
    q_s: torch.Tensor,
    first_pos: int,
    kv_pool: torch.Tensor,
    pages: torch.Tensor,
    kv_len: int,
    scale: float,
    work: _Workspace,
    out: torch.Tensor,
) -> None:
    """Write into ``out`` ([n, Hq, D]) the attention of ``n`` consecutive new tokens of one
    sequence, the first at position ``first_pos``, over its ``kv_len`` tokens."""
    n, num_q_heads, head_dim = q_s.shape
    num_kv_heads = kv_pool.shape[3]
    group = num_q_heads // num_kv_heads
    chunk_tokens = work.chunk_pages * kv_pool.shape[2]
    block = max(1, SCORE_BYTES // (4 * num_q_heads * min(chunk_tokens, kv_len)))
    for i0 in range(0, n, block):
        rows = min(block, n - i0)
        qb = q_s[i0 : i0 + rows].float() * scale  # never in place: .float() may alias q
        # [rows, Hq, D] -> [H_kv, group * rows, D], group-major so rows of a head are contiguous
        qh = qb.view(rows, num_kv_heads, group, head_dim).permute(1, 2, 0, 3)
        qh = qh.reshape(num_kv_heads, group * rows, head_dim)
        kv_hi = min(kv_len, first_pos + i0 + rows)
        res = _attend_block(qh, first_pos + i0, rows, kv_pool, pages, kv_hi, work)
        res = res.view(num_kv_heads, group, rows, head_dim).permute(2, 0, 1, 3)
        out[i0 : i0 + rows] = res.reshape(rows, num_q_heads, head_dim)


def torch_extend(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    scale: float,
    skip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Prefill/extend over K/V already written to the pool; ``skip[s]`` zeroes sequence s
    without reading any of its pages (the guarded path)."""
    shape = PoolShape.of(kv_pool)
    starts = q_indptr.tolist()
    prefixes = prefix_lens.tolist()
    skips = skip.tolist() if skip is not None else [False] * len(prefixes)
    out = torch.empty_like(q)
    kv_lens = [p + starts[s + 1] - starts[s] for s, p in enumerate(prefixes)]
    table = page_table.to(torch.int64)  # int64 before stride math: ids > 32,768 are real
    needed = [(n + shape.page_size - 1) // shape.page_size for n in kv_lens]
    work = _workspace(kv_pool, shape, max(needed, default=1))
    for s, prefix in enumerate(prefixes):
        start, end = starts[s], starts[s + 1]
        if end == start:
            continue
        if skips[s]:
            out[start:end] = 0
            continue
        pages = table[s, : needed[s]]
        _attend_sequence(
            q[start:end], prefix, kv_pool, pages, kv_lens[s], scale, work, out[start:end]
        )
    return out


def torch_decode(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    skip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Decode is extend with one new token per sequence and an empty causal diagonal."""
    num_seqs = q.shape[0]
    q_indptr = torch.arange(num_seqs + 1, dtype=torch.int64)
    prefix_lens = seq_lens.to(torch.int64).cpu() - 1
    return torch_extend(q, kv_pool, page_table, prefix_lens, q_indptr, scale, skip)
