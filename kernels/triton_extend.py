"""Triton paged extend (prefill over a cached prefix), flash-attention style.

One program per (sequence, block of new tokens, query head): it walks the sequence's KV
from position 0 up to the causal limit of its last row, with online softmax. New token i of
sequence s sits at ``prefix_lens[s] + i`` and sees ``[0, prefix_lens[s] + i]``; its own K/V
is already in the pool (SGLang writes first, then attends). K and V loads are both masked
(``other=0``) past the end of the sequence. Set ``TRITON_INTERPRET=1`` before importing this
module to run it on CPU tensors.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kvproof.kernels.layout import PoolShape
from kvproof.kernels.triton_common import exact_fp32_dot, foreign_pages, token_offsets

BLOCK_M = 16  # new tokens per program
BLOCK_N = 32  # KV tokens per inner step


@triton.jit
def _extend_kernel(
    q_ptr,
    kv_ptr,
    table_ptr,
    prefix_ptr,
    indptr_ptr,
    tags_ptr,
    expected_ptr,
    out_ptr,
    err_ptr,
    scale,
    num_pages,
    stride_qt,
    stride_qh,
    stride_ot,
    stride_oh,
    stride_kv,
    stride_page,
    stride_slot,
    stride_head,
    stride_ts,
    PAGE_SIZE: tl.constexpr,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GUARD: tl.constexpr,
    IEEE: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    head = tl.program_id(2)
    kvh = head // GROUP
    q_start = tl.load(indptr_ptr + seq).to(tl.int64)
    num_new = (tl.load(indptr_ptr + seq + 1) - q_start).to(tl.int32)
    prefix = tl.load(prefix_ptr + seq).to(tl.int32)
    kv_len = prefix + num_new
    table_row = table_ptr + seq * stride_ts

    offs_m = block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    m_ok = offs_m < num_new
    d_ok = offs_d < HEAD_DIM
    # causal limit of the block's last row; blocks past the sequence's new tokens read nothing
    hi = tl.minimum(kv_len, prefix + (block + 1) * BLOCK_M)
    hi = tl.where(block * BLOCK_M < num_new, hi, 0)
    if GUARD:
        # a sequence without new tokens reads nothing, so it has nothing to flag
        read_len = tl.where(num_new > 0, kv_len, 0)
        bad = foreign_pages(
            table_row, tags_ptr, tl.load(expected_ptr + seq), read_len, num_pages, PAGE_SIZE
        )
        hi = tl.where(bad > 0, 0, hi)  # a flagged sequence reads nothing at all
        tl.store(err_ptr + seq, (bad > 0).to(tl.int8))

    rows = q_start + offs_m
    q = tl.load(
        q_ptr + rows[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
        mask=m_ok[:, None] & d_ok[None, :],
        other=0.0,
    ).to(tl.float32)
    q = q * scale
    q_pos = prefix + offs_m

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for t0 in range(0, hi, BLOCK_N):
        offs_t = t0 + tl.arange(0, BLOCK_N)
        t_ok = offs_t < hi
        base = token_offsets(
            table_row, offs_t, t_ok, kvh, stride_page, stride_slot, stride_head, PAGE_SIZE
        )
        kv_mask = t_ok[:, None] & d_ok[None, :]
        ptrs = kv_ptr + base[:, None] + offs_d[None, :]
        k = tl.load(ptrs, mask=kv_mask, other=0.0)
        v = tl.load(ptrs + stride_kv, mask=kv_mask, other=0.0)
        if IEEE:
            s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        else:
            s = tl.dot(q.to(k.dtype), tl.trans(k))
        # position 0 is visible to every row, so each row's running max is finite after the
        # first step and exp(-inf - m) is a clean 0
        seen = t_ok[None, :] & (offs_t[None, :] <= q_pos[:, None])
        s = tl.where(seen, s, float("-inf"))
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

    # l_i is 0 only on rows that read nothing (padding rows, flagged sequences)
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    if GUARD:
        out = tl.where(bad > 0, 0.0, out)
    tl.store(
        out_ptr + rows[:, None] * stride_ot + head * stride_oh + offs_d[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=m_ok[:, None] & d_ok[None, :],
    )


def triton_extend(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    scale: float,
    page_tags: torch.Tensor | None = None,
    expected_tags: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch the extend kernel; with tags given, also return per-sequence error flags.

    The grid's block count comes from the longest run of new tokens, one host read of
    ``q_indptr`` (prefill is not on the per-token latency path that decode is).
    """
    shape = PoolShape.of(kv_pool)
    num_heads, head_dim = q.shape[1], q.shape[2]
    num_seqs = prefix_lens.shape[0]
    guard = page_tags is not None and expected_tags is not None
    q = q.contiguous()
    out = torch.empty_like(q)
    err = torch.zeros(num_seqs, dtype=torch.int8, device=q.device)
    max_new = int((q_indptr[1:] - q_indptr[:-1]).max()) if num_seqs else 0
    if max_new == 0:
        return out, err.bool() if guard else None
    tags = page_tags if guard else err  # unused pointers when not guarded
    expected = expected_tags if guard else err
    _extend_kernel[(num_seqs, triton.cdiv(max_new, BLOCK_M), num_heads)](
        q,
        kv_pool,
        page_table,
        prefix_lens,
        q_indptr,
        tags,
        expected,
        out,
        err,
        scale,
        shape.num_pages,
        q.stride(0),
        q.stride(1),
        out.stride(0),
        out.stride(1),
        kv_pool.stride(0),
        kv_pool.stride(1),
        kv_pool.stride(2),
        kv_pool.stride(3),
        page_table.stride(0),
        PAGE_SIZE=shape.page_size,
        GROUP=num_heads // shape.num_kv_heads,
        HEAD_DIM=head_dim,
        BLOCK_D=max(16, triton.next_power_of_2(head_dim)),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        GUARD=guard,
        IEEE=exact_fp32_dot(kv_pool.dtype),
    )
    return out, err.bool() if guard else None
