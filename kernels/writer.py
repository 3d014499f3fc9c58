"""Write new tokens' K/V into their slots (SGLang writes first, then attends)."""

from __future__ import annotations

import torch

from kvproof.kernels.layout import KernelInputError, PoolShape


def write_kv(
    kv_pool: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slot_mapping: torch.Tensor
) -> None:
    """Store ``k[i], v[i]`` (``[num_tokens, num_kv_heads, head_dim]``) at ``slot_mapping[i]``.

    ``slot = page * page_size + offset`` in int64: with 1-token pages and 2**31 tokens of
    cache an int32 slot wraps. Negative slots are padding (vLLM's ``PADDING_SLOT_ID = -1``)
    and are skipped. The pool must be contiguous over (page, slot) so that a slot is one
    row of ``kv_pool[i].view(-1, H, D)``.
    """
    shape = PoolShape.of(kv_pool)
    expect = (slot_mapping.shape[0], shape.num_kv_heads, shape.head_dim)
    if slot_mapping.dim() != 1 or tuple(k.shape) != expect or tuple(v.shape) != expect:
        raise KernelInputError(
            f"k and v must be {list(expect)} for {slot_mapping.shape[0]} slots, "
            f"got {tuple(k.shape)} and {tuple(v.shape)}"
        )
    if {k.dtype, v.dtype} != {kv_pool.dtype} or {k.device, v.device} != {kv_pool.device}:
        raise KernelInputError(
            f"k/v ({k.dtype}, {k.device}) must match kv_pool ({kv_pool.dtype}, {kv_pool.device})"
        )
    slots = slot_mapping.to(device=kv_pool.device, dtype=torch.int64)
    capacity = shape.num_pages * shape.page_size
    if not slots.is_cuda and slots.numel() and int(slots.max()) >= capacity:
        raise KernelInputError(f"slot {int(slots.max())} is outside the pool ({capacity} slots)")
    keep = slots >= 0
    if not bool(keep.all()):
        slots, k, v = slots[keep], k[keep], v[keep]
    rows = (capacity, shape.num_kv_heads, shape.head_dim)
    kv_pool[0].view(rows).index_copy_(0, slots, k)
    kv_pool[1].view(rows).index_copy_(0, slots, v)
