"""Triton paged decode: split-KV with online softmax, then a reduce (flash-decoding).

Stage 1, one program per (sequence, KV head, split): the ``group`` query heads that share
the KV head are rows of one ``tl.dot``, so each K/V byte is loaded once for the group
(GQA). Each split keeps (max, sum, unnormalised accumulator) and writes them out; stage 2
combines the splits of a (sequence, head). Splitting the sequence is what keeps a GPU busy
when ``num_seqs * num_kv_heads`` is far below the number of SMs (long-context decode).

Both K and V loads are masked with ``other=0``: unused slots may hold NaN and a masked score
alone still gives ``0 * NaN = NaN`` in ``p @ V``. Set ``TRITON_INTERPRET=1`` before importing
this module to run it on CPU tensors.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kvproof.kernels.layout import PoolShape
from kvproof.kernels.triton_common import exact_fp32_dot, foreign_pages, token_offsets

BLOCK_N = 32  # tokens per inner step
MIN_SPLIT_TOKENS = 256  # a split shorter than this costs more in the reduce than it saves


@triton.jit
def _decode_split_kernel(
    q_ptr,
    kv_ptr,
    table_ptr,
    lens_ptr,
    tags_ptr,
    expected_ptr,
    m_ptr,
    l_ptr,
    acc_ptr,
    err_ptr,
    scale,
    num_pages,
    tokens_per_split,
    num_splits,
    stride_qs,
    stride_qh,
    stride_kv,
    stride_page,
    stride_slot,
    stride_head,
    stride_ts,
    PAGE_SIZE: tl.constexpr,
    GROUP: tl.constexpr,
    BLOCK_G: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GUARD: tl.constexpr,
    IEEE: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP
    kv_len = tl.load(lens_ptr + seq).to(tl.int32)
    table_row = table_ptr + seq * stride_ts
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, kv_len)
    if GUARD:
        bad = foreign_pages(
            table_row, tags_ptr, tl.load(expected_ptr + seq), kv_len, num_pages, PAGE_SIZE
        )
        end = tl.where(bad > 0, start, end)  # a flagged sequence reads nothing at all
        tl.store(err_ptr + seq, (bad > 0).to(tl.int8))

    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    g_ok = offs_g < GROUP
    d_ok = offs_d < HEAD_DIM
    heads = kvh * GROUP + offs_g
    q = tl.load(
        q_ptr + seq * stride_qs + heads[:, None] * stride_qh + offs_d[None, :],
        mask=g_ok[:, None] & d_ok[None, :],
        other=0.0,
    ).to(tl.float32)
    q = q * scale

    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for t0 in range(start, end, BLOCK_N):
        offs_t = t0 + tl.arange(0, BLOCK_N)
        t_ok = offs_t < end
        base = token_offsets(
            table_row, offs_t, t_ok, kvh, stride_page, stride_slot, stride_head, PAGE_SIZE
        )
        kv_mask = t_ok[:, None] & d_ok[None, :]
        ptrs = kv_ptr + base[:, None] + offs_d[None, :]
        k = tl.load(ptrs, mask=kv_mask, other=0.0)
        v = tl.load(ptrs + stride_kv, mask=kv_mask, other=0.0)
        if IEEE:  # fp32 pool: exact fp32 products (TF32 would miss the 1e-5 tolerance)
            s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        else:  # fp16/bf16: native-dtype operands, fp32 accumulation (as FlashInfer)
            s = tl.dot(q.to(k.dtype), tl.trans(k))
        s = tl.where(t_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if IEEE:
            pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        m_i = m_new

    row = (seq * num_heads + heads) * num_splits + split  # [seqs, heads, splits] layout
    tl.store(m_ptr + row, m_i, mask=g_ok)
    tl.store(l_ptr + row, l_i, mask=g_ok)
    tl.store(
        acc_ptr + row[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=g_ok[:, None] & d_ok[None, :]
    )


@triton.jit
def _decode_reduce_kernel(
    m_ptr,
    l_ptr,
    acc_ptr,
    err_ptr,
    out_ptr,
    num_splits,
    stride_os,
    stride_oh,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_S: tl.constexpr,
    GUARD: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    num_heads = tl.num_programs(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    s_ok = offs_s < num_splits
    d_ok = offs_d < HEAD_DIM
    row = (seq * num_heads + head) * num_splits + offs_s
    m = tl.load(m_ptr + row, mask=s_ok, other=float("-inf"))
    lsum = tl.load(l_ptr + row, mask=s_ok, other=0.0)
    acc = tl.load(
        acc_ptr + row[:, None] * HEAD_DIM + offs_d[None, :],
        mask=s_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    # empty splits (past the end, or all of a flagged sequence) carry m = -inf: weight 0
    m_max = tl.maximum(tl.max(m, axis=0), -3.0e38)
    w = tl.exp(m - m_max)
    denom = tl.sum(w * lsum, axis=0)
    out = tl.sum(w[:, None] * acc, axis=0) / tl.where(denom > 0, denom, 1.0)
    if GUARD:
        out = tl.where(tl.load(err_ptr + seq) != 0, 0.0, out)
    tl.store(
        out_ptr + seq * stride_os + head * stride_oh + offs_d,
        out.to(out_ptr.dtype.element_ty),
        mask=d_ok,
    )


def _num_splits(num_seqs: int, num_kv_heads: int, max_tokens: int, device: torch.device) -> int:
    """Enough splits to give every SM two programs, none shorter than MIN_SPLIT_TOKENS."""
    if device.type == "cuda":
        sms = torch.cuda.get_device_properties(device).multi_processor_count
    else:
        sms = 2  # interpreter: keep the grid small
    want = int(triton.cdiv(2 * sms, max(1, num_seqs * num_kv_heads)))
    return max(1, min(want, int(triton.cdiv(max_tokens, MIN_SPLIT_TOKENS)), 64))


def triton_decode(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    page_tags: torch.Tensor | None = None,
    expected_tags: torch.Tensor | None = None,
    num_splits: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch both stages; with tags given, also return the per-sequence error flags.

    The number of splits is sized from the table's width (``max_pages * page_size``), an
    upper bound known on the host, so deciding it never syncs with the device.
    """
    shape = PoolShape.of(kv_pool)
    num_seqs, num_heads, head_dim = q.shape
    group = num_heads // shape.num_kv_heads
    q = q.contiguous()
    max_tokens = max(1, page_table.shape[1] * shape.page_size)
    if num_splits is None:
        num_splits = _num_splits(num_seqs, shape.num_kv_heads, max_tokens, q.device)
    tokens_per_split = triton.cdiv(triton.cdiv(max_tokens, num_splits), BLOCK_N) * BLOCK_N
    num_splits = triton.cdiv(max_tokens, tokens_per_split)
    guard = page_tags is not None and expected_tags is not None
    dev = q.device
    m = torch.empty((num_seqs, num_heads, num_splits), dtype=torch.float32, device=dev)
    lsum = torch.empty_like(m)
    acc = torch.empty((num_seqs, num_heads, num_splits, head_dim), dtype=torch.float32, device=dev)
    err = torch.zeros(num_seqs, dtype=torch.int8, device=dev)
    out = torch.empty_like(q)
    if num_seqs == 0:
        return out, err.bool() if guard else None
    block_d = max(16, triton.next_power_of_2(head_dim))
    tags = page_tags if guard else err  # unused pointers when not guarded
    expected = expected_tags if guard else err
    _decode_split_kernel[(num_seqs, shape.num_kv_heads, num_splits)](
        q,
        kv_pool,
        page_table,
        seq_lens,
        tags,
        expected,
        m,
        lsum,
        acc,
        err,
        scale,
        shape.num_pages,
        tokens_per_split,
        num_splits,
        q.stride(0),
        q.stride(1),
        kv_pool.stride(0),
        kv_pool.stride(1),
        kv_pool.stride(2),
        kv_pool.stride(3),
        page_table.stride(0),
        PAGE_SIZE=shape.page_size,
        GROUP=group,
        BLOCK_G=max(16, triton.next_power_of_2(group)),
        HEAD_DIM=head_dim,
        BLOCK_D=block_d,
        BLOCK_N=BLOCK_N,
        GUARD=guard,
        IEEE=exact_fp32_dot(kv_pool.dtype),
    )
    _decode_reduce_kernel[(num_seqs, num_heads)](
        m,
        lsum,
        acc,
        err,
        out,
        num_splits,
        out.stride(0),
        out.stride(1),
        HEAD_DIM=head_dim,
        BLOCK_D=block_d,
        BLOCK_S=max(2, triton.next_power_of_2(num_splits)),
        GUARD=guard,
    )
    return out, err.bool() if guard else None
