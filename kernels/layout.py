"""The paged KV layout: its shape vocabulary, input checks and the FlashInfer CSR converter.

Layout (copied from vLLM/SGLang, NHD): ``kv_pool[2, num_pages, page_size, num_kv_heads,
head_dim]`` with index 0 = K and 1 = V; a page table ``int32 [num_seqs, max_pages]`` padded
with -1. Every kernel in this package reads the pool through this one description.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


class KernelInputError(ValueError):
    """Bad shapes, dtypes or indices given to a kernel entry point (one typed error)."""


@dataclass(frozen=True)
class PoolShape:
    """The static geometry of a KV pool: what every kernel needs besides the data."""

    num_pages: int
    page_size: int
    num_kv_heads: int
    head_dim: int

    @staticmethod
    def of(kv_pool: torch.Tensor) -> PoolShape:
        """Read the geometry of ``kv_pool`` and reject anything that is not the NHD layout."""
        if kv_pool.dim() != 5 or kv_pool.shape[0] != 2:
            raise KernelInputError(
                "kv_pool must be [2, num_pages, page_size, num_kv_heads, head_dim], "
                f"got {tuple(kv_pool.shape)}"
            )
        _, num_pages, page_size, num_kv_heads, head_dim = kv_pool.shape
        if page_size < 1 or head_dim < 1 or num_kv_heads < 1:
            raise KernelInputError(f"kv_pool has an empty dimension: {tuple(kv_pool.shape)}")
        return PoolShape(num_pages, page_size, num_kv_heads, head_dim)

    @property
    def bytes_per_token(self) -> int:
        """Elements of K (or V) per token; multiply by the element size for bytes."""
        return self.num_kv_heads * self.head_dim


def make_tag(request_id: int, generation: int) -> int:
    """Owner tag of a page: ``(request_id << 32) | generation``.

    The generation distinguishes two lives of the same request id (an aborted request whose
    id is reused), which is exactly the reuse that leaked KV in the incident
    (docs/upstream.md#press-reports).
    """
    if not 0 <= generation < 2**32:
        raise KernelInputError(f"generation must fit in 32 bits, got {generation}")
    if not 0 <= request_id < 2**31:
        raise KernelInputError(f"request_id must fit in 31 bits (int64 tag), got {request_id}")
    return (request_id << 32) | generation


def pages_needed(seq_lens: torch.Tensor, page_size: int) -> torch.Tensor:
    """``ceil(seq_len / page_size)`` per sequence: the table entries a sequence reads."""
    return (seq_lens.to(torch.int64) + page_size - 1) // page_size


def check_query(q: torch.Tensor, shape: PoolShape, kv_pool: torch.Tensor) -> None:
    """Reject a query whose heads, head_dim, dtype or device do not fit the pool."""
    if q.dim() != 3:
        raise KernelInputError(f"q must be [tokens, num_q_heads, head_dim], got {tuple(q.shape)}")
    if q.shape[2] != shape.head_dim:
        raise KernelInputError(f"q head_dim {q.shape[2]} != kv_pool head_dim {shape.head_dim}")
    if q.shape[1] % shape.num_kv_heads:
        raise KernelInputError(
            f"num_q_heads {q.shape[1]} is not a multiple of num_kv_heads {shape.num_kv_heads}"
        )
    if q.dtype != kv_pool.dtype or q.device != kv_pool.device:
        raise KernelInputError(
            f"q ({q.dtype}, {q.device}) and kv_pool ({kv_pool.dtype}, {kv_pool.device}) differ"
        )


def check_table(
    page_table: torch.Tensor,
    kv_lens: torch.Tensor,
    shape: PoolShape,
    num_seqs: int,
    *,
    check_ids: bool = True,
    min_len: int = 1,
) -> None:
    """Check the table against the lengths it must cover.

    Content checks (ids in range, no -1 inside a sequence) read the values, which on CUDA
    would force a device sync on every decode step; they run on CPU tensors only, and the
    GPU path trusts the scheduler as FlashInfer and vLLM do. The guarded entry points pass
    ``check_ids=False``: there a bad id is a flagged sequence, not an exception.
    ``min_len=0`` admits sequences that read nothing (extend rows without new tokens).
    """
    if page_table.dim() != 2 or page_table.shape[0] != num_seqs:
        raise KernelInputError(
            f"page_table must be [{num_seqs}, max_pages], got {tuple(page_table.shape)}"
        )
    if page_table.dtype not in (torch.int32, torch.int64):
        raise KernelInputError(f"page_table must be int32 or int64, got {page_table.dtype}")
    if kv_lens.shape != (num_seqs,):
        raise KernelInputError(f"lengths must be [{num_seqs}], got {tuple(kv_lens.shape)}")
    if page_table.is_cuda or not num_seqs:
        return
    # numpy views of the CPU tensors: ~1-3 us a call against ~5-8 us for a torch op, and
    # this runs on every decode step
    lens = kv_lens.numpy().astype(np.int64)
    table = page_table.numpy()
    needed = (lens + shape.page_size - 1) // shape.page_size
    if int(lens.min()) < min_len:
        raise KernelInputError(f"every sequence needs at least {min_len} KV token(s)")
    if int(needed.max()) > table.shape[1]:
        raise KernelInputError(
            f"a sequence needs {int(needed.max())} pages but the table has {table.shape[1]} columns"
        )
    if not check_ids:
        return
    used = np.arange(table.shape[1]) < needed[:, None]
    # viewed unsigned, -1 becomes huge: one compare rejects negative and too-large ids
    unsigned = table.view(np.uint32 if table.itemsize == 4 else np.uint64)
    outside = np.greater_equal(unsigned, shape.num_pages)
    if (outside & used).any():
        raise KernelInputError(
            f"page_table refers to pages outside [0, {shape.num_pages}) within a sequence"
        )


def check_extend_lens(
    q: torch.Tensor, prefix_lens: torch.Tensor, q_indptr: torch.Tensor
) -> torch.Tensor:
    """Validate the CSR over new tokens and return the KV length of each sequence."""
    if q_indptr.dim() != 1 or q_indptr.shape[0] != prefix_lens.shape[0] + 1:
        raise KernelInputError(
            f"q_indptr must be [num_seqs + 1] = [{prefix_lens.shape[0] + 1}], "
            f"got {tuple(q_indptr.shape)}"
        )
    new_lens = (q_indptr[1:] - q_indptr[:-1]).to(torch.int64)
    if not q_indptr.is_cuda and (
        int(q_indptr[0]) != 0
        or int(q_indptr[-1]) != q.shape[0]
        or bool((new_lens < 0).any())
        or bool((prefix_lens < 0).any())
    ):
        raise KernelInputError(
            "q_indptr must rise from 0 to total_new_tokens and prefix_lens must be >= 0"
        )
    return prefix_lens.to(torch.int64) + new_lens


def csr_to_page_table(
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    kv_last_page_len: torch.Tensor,
    page_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Convert FlashInfer's CSR page lists into ``(page_table int32, seq_lens int32)``.

    FlashInfer (``BatchDecodeWithPagedKVCacheWrapper.plan``) names the pages of sequence s as
    ``kv_indices[kv_indptr[s]:kv_indptr[s+1]]`` and how full the last one is in
    ``kv_last_page_len[s]`` (1..page_size), so ``seq_len = (n_pages - 1) * page_size + last``.
    """
    counts = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int64)
    last = kv_last_page_len.to(torch.int64)
    num_seqs = counts.shape[0]
    if last.shape != (num_seqs,):
        raise KernelInputError(f"kv_last_page_len must be [{num_seqs}], got {tuple(last.shape)}")
    if num_seqs and (
        bool((counts < 1).any()) or bool((last < 1).any()) or bool((last > page_size).any())
    ):
        raise KernelInputError("each sequence needs >= 1 page and 1 <= last_page_len <= page_size")
    if int(kv_indptr[-1]) > kv_indices.shape[0]:
        raise KernelInputError("kv_indptr runs past the end of kv_indices")
    max_pages = int(counts.max()) if num_seqs else 0
    device = kv_indices.device
    table = torch.full((num_seqs, max_pages), -1, dtype=torch.int32, device=device)
    rows = torch.repeat_interleave(torch.arange(num_seqs, device=device), counts.to(device))
    flat = torch.arange(int(kv_indptr[-1]) - int(kv_indptr[0]), device=device)
    cols = flat - (kv_indptr[:-1].to(torch.int64).to(device) - int(kv_indptr[0]))[rows]
    table[rows, cols] = kv_indices[int(kv_indptr[0]) : int(kv_indptr[-1])].to(torch.int32)
    seq_lens = ((counts - 1) * page_size + last).to(torch.int32).to(device)
    return table, seq_lens
