"""The oracle: gather each sequence's tokens, slice ``[:seq_len]``, softmax in fp32.

Deliberately naive (one sequence at a time, full score matrix, no chunking) so that a
reader can check it against the attention formula by eye; every fast path is tested
against it. Slicing before the math means garbage or NaN in unused slots never reaches it.
"""

from __future__ import annotations

import torch


def gather_tokens(kv_pool: torch.Tensor, pages: torch.Tensor, length: int) -> torch.Tensor:
    """The first ``length`` tokens of K and V stored in ``pages``, as ``[2, length, H, D]``."""
    page_size = kv_pool.shape[2]
    needed = (length + page_size - 1) // page_size
    ids = pages[:needed].to(torch.int64)  # int64 before any stride math (ids > 32,768)
    kv = kv_pool[:, ids]  # [2, needed, page_size, H, D]
    return kv.reshape(2, needed * page_size, *kv_pool.shape[3:])[:, :length]


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_pos: torch.Tensor, scale: float
) -> torch.Tensor:
    """Causal GQA attention of queries at positions ``q_pos`` over K/V ``[T, H_kv, D]``."""
    group = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(group, dim=1)  # [T, Hq, D]
    vf = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,thd->hqt", q.float(), kf) * scale
    allowed = torch.arange(k.shape[0], device=q.device)[None, :] <= q_pos[:, None]
    scores = scores.masked_fill(~allowed[None], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqt,thd->qhd", probs, vf)


def reference_decode(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    skip: torch.Tensor | None = None,
) -> torch.Tensor:
    """One query per sequence, attending to all ``seq_len`` tokens of its pages.

    ``skip[s]`` (the guard's verdict) leaves sequence s at zero without reading its pages.
    """
    out = torch.zeros_like(q)
    for s in range(q.shape[0]):
        if skip is not None and bool(skip[s]):
            continue
        length = int(seq_lens[s])
        kv = gather_tokens(kv_pool, page_table[s], length)
        pos = torch.tensor([length - 1], device=q.device)
        out[s] = attend(q[s : s + 1], kv[0], kv[1], pos, scale)[0].to(q.dtype)
    return out


def reference_extend(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    scale: float,
    skip: torch.Tensor | None = None,
) -> torch.Tensor:
    """New token i of sequence s sits at ``prefix_lens[s] + i`` and sees ``[0, that]``."""
    out = torch.zeros_like(q)
    for s in range(prefix_lens.shape[0]):
        start, end = int(q_indptr[s]), int(q_indptr[s + 1])
        if end == start or (skip is not None and bool(skip[s])):
            continue
        prefix = int(prefix_lens[s])
        kv = gather_tokens(kv_pool, page_table[s], prefix + end - start)
        pos = prefix + torch.arange(end - start, device=q.device)
        out[start:end] = attend(q[start:end], kv[0], kv[1], pos, scale).to(q.dtype)
    return out
