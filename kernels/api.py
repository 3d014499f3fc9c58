"""Public entry points: check inputs once, pick a backend, dispatch.

Backends: ``"torch"`` (CPU default, ``torch_paged``), ``"triton"`` (``triton_decode`` /
``triton_extend``; on CPU tensors only under ``TRITON_INTERPRET=1``), ``"reference"`` (the
oracle) and ``"auto"``: Triton when the pool is on CUDA and Triton imports, else torch.
The Triton modules are imported lazily, on first use, so that importing this package never
fixes the interpreter setting for a caller who sets it later.
"""

from __future__ import annotations

import importlib.util
from typing import Literal

import torch

from kvproof.kernels.guard import check_tag_inputs, tag_mismatch
from kvproof.kernels.layout import (
    KernelInputError,
    PoolShape,
    check_extend_lens,
    check_query,
    check_table,
)
from kvproof.kernels.reference import reference_decode, reference_extend
from kvproof.kernels.torch_paged import torch_decode, torch_extend

Backend = Literal["auto", "torch", "triton", "reference"]
BACKENDS: tuple[str, ...] = ("auto", "torch", "triton", "reference")


def triton_available() -> bool:
    """Triton is installed (it is an optional, dev/GPU dependency)."""
    return importlib.util.find_spec("triton") is not None


def _triton_runs_on_cpu() -> bool:
    """The kernels were jitted as interpreted functions (``TRITON_INTERPRET=1`` at import)."""
    from kvproof.kernels import triton_decode

    return type(triton_decode._decode_split_kernel).__name__ == "InterpretedFunction"


def resolve_backend(backend: str, kv_pool: torch.Tensor) -> str:
    """The concrete backend for ``backend`` and this pool, or a ``KernelInputError``."""
    if backend not in BACKENDS:
        raise KernelInputError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "triton" if kv_pool.is_cuda and triton_available() else "torch"
    if backend == "triton":
        if not triton_available():
            raise KernelInputError("backend='triton' but triton is not installed")
        if not kv_pool.is_cuda and not _triton_runs_on_cpu():
            raise KernelInputError(
                "backend='triton' on CPU tensors needs TRITON_INTERPRET=1 set before "
                "kvproof.kernels.triton_* is first imported"
            )
    return backend


def _scale(scale: float | None, head_dim: int) -> float:
    return head_dim**-0.5 if scale is None else float(scale)


def _decode_inputs(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    check_ids: bool,
) -> tuple[PoolShape, torch.Tensor, torch.Tensor]:
    shape = PoolShape.of(kv_pool)
    check_query(q, shape, kv_pool)
    page_table = page_table.to(kv_pool.device)
    seq_lens = seq_lens.to(kv_pool.device)
    check_table(page_table, seq_lens, shape, q.shape[0], check_ids=check_ids)
    return shape, page_table, seq_lens


def _extend_inputs(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    check_ids: bool,
) -> tuple[PoolShape, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    shape = PoolShape.of(kv_pool)
    check_query(q, shape, kv_pool)
    page_table = page_table.to(kv_pool.device)
    prefix_lens = prefix_lens.to(kv_pool.device)
    q_indptr = q_indptr.to(kv_pool.device)
    kv_lens = check_extend_lens(q, prefix_lens, q_indptr)
    # a sequence with no new tokens reads nothing: its table row need not cover anything
    read_lens = torch.where(q_indptr[1:] > q_indptr[:-1], kv_lens, 0)
    check_table(page_table, read_lens, shape, prefix_lens.shape[0], check_ids=check_ids, min_len=0)
    return shape, page_table, prefix_lens, q_indptr, read_lens


def paged_decode(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    scale: float | None = None,
    backend: Backend = "auto",
) -> torch.Tensor:
    """Decode attention: ``q[s]`` (``[num_q_heads, head_dim]``) over the ``seq_lens[s]``
    tokens held in the pages ``page_table[s]``. Returns ``[num_seqs, num_q_heads, head_dim]``
    in q's dtype; ``scale`` defaults to ``head_dim ** -0.5``."""
    _, page_table, seq_lens = _decode_inputs(q, kv_pool, page_table, seq_lens, True)
    sc = _scale(scale, q.shape[2])
    chosen = resolve_backend(backend, kv_pool)
    if chosen == "reference":
        return reference_decode(q, kv_pool, page_table, seq_lens, sc)
    if chosen == "triton":
        from kvproof.kernels.triton_decode import triton_decode

        return triton_decode(q, kv_pool, page_table, seq_lens, sc)[0]
    return torch_decode(q, kv_pool, page_table, seq_lens, sc)


def paged_extend(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    *,
    scale: float | None = None,
    backend: Backend = "auto",
) -> torch.Tensor:
    """Prefill/extend: new tokens ``q[q_indptr[s]:q_indptr[s+1]]`` of sequence s, whose K/V
    are already in the pool after ``prefix_lens[s]`` cached tokens, attend causally.
    Returns ``[total_new_tokens, num_q_heads, head_dim]``."""
    _, page_table, prefix_lens, q_indptr, _ = _extend_inputs(
        q, kv_pool, page_table, prefix_lens, q_indptr, True
    )
    sc = _scale(scale, q.shape[2])
    chosen = resolve_backend(backend, kv_pool)
    if chosen == "reference":
        return reference_extend(q, kv_pool, page_table, prefix_lens, q_indptr, sc)
    if chosen == "triton":
        from kvproof.kernels.triton_extend import triton_extend

        return triton_extend(q, kv_pool, page_table, prefix_lens, q_indptr, sc)[0]
    return torch_extend(q, kv_pool, page_table, prefix_lens, q_indptr, sc)


def paged_decode_guarded(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    seq_lens: torch.Tensor,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
    *,
    scale: float | None = None,
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``paged_decode`` that first checks page ownership. Returns ``(out, err)``: ``err[s]``
    is True when a page sequence s would read carries a tag other than
    ``expected_tags[s]``; then ``out[s]`` is zeros and none of its pages is read."""
    shape, page_table, seq_lens = _decode_inputs(q, kv_pool, page_table, seq_lens, False)
    page_tags = page_tags.to(kv_pool.device)
    expected_tags = expected_tags.to(kv_pool.device)
    check_tag_inputs(page_tags, expected_tags, q.shape[0])
    sc = _scale(scale, q.shape[2])
    chosen = resolve_backend(backend, kv_pool)
    if chosen == "triton":
        from kvproof.kernels.triton_decode import triton_decode

        out, err = triton_decode(
            q, kv_pool, page_table, seq_lens, sc, page_tags=page_tags, expected_tags=expected_tags
        )
        assert err is not None
        return out, err
    err = tag_mismatch(page_table, seq_lens, shape.page_size, page_tags, expected_tags)
    if chosen == "reference":
        return reference_decode(q, kv_pool, page_table, seq_lens, sc, skip=err), err
    return torch_decode(q, kv_pool, page_table, seq_lens, sc, skip=err), err


def paged_extend_guarded(
    q: torch.Tensor,
    kv_pool: torch.Tensor,
    page_table: torch.Tensor,
    prefix_lens: torch.Tensor,
    q_indptr: torch.Tensor,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
    *,
    scale: float | None = None,
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``paged_extend`` with the owner-tag check of ``paged_decode_guarded``. A sequence
    with no new tokens reads nothing and is never flagged."""
    shape, page_table, prefix_lens, q_indptr, read_lens = _extend_inputs(
        q, kv_pool, page_table, prefix_lens, q_indptr, False
    )
    page_tags = page_tags.to(kv_pool.device)
    expected_tags = expected_tags.to(kv_pool.device)
    check_tag_inputs(page_tags, expected_tags, prefix_lens.shape[0])
    sc = _scale(scale, q.shape[2])
    chosen = resolve_backend(backend, kv_pool)
    if chosen == "triton":
        from kvproof.kernels.triton_extend import triton_extend

        out, err = triton_extend(
            q,
            kv_pool,
            page_table,
            prefix_lens,
            q_indptr,
            sc,
            page_tags=page_tags,
            expected_tags=expected_tags,
        )
        assert err is not None
        return out, err
    err = tag_mismatch(page_table, read_lens, shape.page_size, page_tags, expected_tags)
    if chosen == "reference":
        return reference_extend(q, kv_pool, page_table, prefix_lens, q_indptr, sc, skip=err), err
    return torch_extend(q, kv_pool, page_table, prefix_lens, q_indptr, sc, skip=err), err
