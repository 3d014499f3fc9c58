"""Device helpers shared by the Triton kernels: paged addressing and the owner-tag scan.

Import this (or any ``triton_*`` module) only after deciding on ``TRITON_INTERPRET``: Triton
reads it when ``@triton.jit`` runs, i.e. at import time of the module defining the kernel.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton import knobs


def exact_fp32_dot(dtype: torch.dtype) -> bool:
    """Whether kernels widen K/V to fp32 and use IEEE (not TF32) dots.

    Always for fp32 pools (TF32 would miss the 1e-5 tolerance). Also for bf16 under the
    interpreter: Triton 3.9's interpreter stores bf16 as uint16 and its ``create_dot`` runs
    ``np.matmul`` on those integers, so a native bf16 dot returns garbage there.
    """
    return dtype == torch.float32 or (dtype == torch.bfloat16 and bool(knobs.runtime.interpret))


@triton.jit
def token_offsets(
    table_row_ptr,
    offs_t,
    valid,
    kvh,
    stride_page,
    stride_slot,
    stride_head,
    PAGE_SIZE: tl.constexpr,
):
    """Element offset of token ``offs_t``'s K row for KV head ``kvh`` (int64 throughout).

    The page id is widened to int64 before it meets the page stride: with 1-token pages an
    int32 product overflows from page 2**31 / stride, and SGLang/vLLM pools exceed that.
    """
    page = tl.load(table_row_ptr + offs_t // PAGE_SIZE, mask=valid, other=0).to(tl.int64)
    slot = (offs_t % PAGE_SIZE).to(tl.int64)
    return page * stride_page + slot * stride_slot + kvh.to(tl.int64) * stride_head


@triton.jit
def foreign_pages(table_row_ptr, tags_ptr, expected, kv_len, num_pages, PAGE_SIZE: tl.constexpr):
    """Count the pages among the first ``ceil(kv_len / PAGE_SIZE)`` entries whose tag is not
    ``expected`` (a -1 or out-of-range id counts too). Every program of a sequence runs it,
    so each knows the verdict before it reads a single K/V byte."""
    needed = (kv_len + PAGE_SIZE - 1) // PAGE_SIZE
    bad = tl.zeros([64], dtype=tl.int32)
    for p0 in range(0, needed, 64):  # 64 table entries per step
        offs_p = p0 + tl.arange(0, 64)
        used = offs_p < needed
        ids = tl.load(table_row_ptr + offs_p, mask=used, other=0).to(tl.int64)
        in_pool = (ids >= 0) & (ids < num_pages)
        tags = tl.load(tags_ptr + ids, mask=used & in_pool, other=0)
        bad += (used & ((tags != expected) | (in_pool == 0))).to(tl.int32)
    return tl.sum(bad, axis=0)
