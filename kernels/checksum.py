"""Adler-32 of KV pages, computed on the pool's own device.

Per-transfer checksums (SGLang #39500) let the decode side verify that the pages it received
are the bytes the prefill side sent. Copying pages to the host to run ``zlib`` would cost a
device-to-host transfer per handoff; instead the sums are formed with torch integer ops
where the pages live and only the 32-bit result crosses to the host.

Byte order: for each id in ``page_ids`` in the order given, the raw bytes of its K page,
then of its V page (``kv_pool[0, id]`` then ``kv_pool[1, id]``, each in memory order of a
contiguous ``[page_size, num_kv_heads, head_dim]`` block, native little-endian). The result
equals ``zlib.adler32`` of those bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kvproof.kernels.layout import KernelInputError, PoolShape

MOD = 65521  # largest prime below 2**16 (RFC 1950)
ROW = 4096  # bytes per row of the blocked sum: ROW * 255 * ROW / 2 < 2**31 per row of weights
CHUNK_BYTES = 16 << 20  # bytes summed at a time; bounds the int32 scratch at 4x this


def _weighted_sums(raw: torch.Tensor) -> tuple[int, int]:
    """``(sum x_i, sum (n - i) x_i)`` mod MOD for a flat uint8 tensor ``x`` of length n.

    Blocked so no intermediate overflows int64: with ``i = r * ROW + c`` the weight splits
    into ``(n - (r + 1) * ROW) + (ROW - c)``; the first part is reduced mod MOD per row
    before it multiplies the row sum, the second is bounded by ``ROW`` per element.
    """
    n = raw.numel()
    rows = n // ROW
    main = raw[: rows * ROW].view(rows, ROW).to(torch.int32)
    tail = raw[rows * ROW :].to(torch.int32)
    dev = raw.device
    in_row = torch.arange(ROW, 0, -1, dtype=torch.int32, device=dev)  # ROW - c
    row_sums = main.sum(dim=1, dtype=torch.int64)
    row_base = (n - (torch.arange(rows, device=dev, dtype=torch.int64) + 1) * ROW) % MOD
    weighted = (main * in_row).sum(dtype=torch.int64) + ((row_sums % MOD) * row_base).sum()
    tail_w = torch.arange(tail.numel(), 0, -1, dtype=torch.int64, device=dev)  # n - i
    weighted = weighted + (tail.to(torch.int64) * tail_w).sum()
    total = row_sums.sum() + tail.sum(dtype=torch.int64)
    return int(total % MOD), int(weighted % MOD)


def page_checksum(kv_pool: torch.Tensor, page_ids: Sequence[int] | torch.Tensor) -> int:
    """Adler-32 (as ``zlib.adler32``) of the K then V bytes of each page, in order."""
    shape = PoolShape.of(kv_pool)
    ids = torch.as_tensor(page_ids, dtype=torch.int64).to(kv_pool.device).flatten()
    if (
        not ids.is_cuda
        and ids.numel()
        and (int(ids.min()) < 0 or int(ids.max()) >= shape.num_pages)
    ):
        raise KernelInputError(f"page ids must lie in [0, {shape.num_pages})")
    page_bytes = 2 * kv_pool[0, 0].numel() * kv_pool.element_size()
    per_chunk = max(1, CHUNK_BYTES // page_bytes)
    a, b = 1, 0
    for start in range(0, ids.numel(), per_chunk):
        chunk = ids[start : start + per_chunk]
        # [n, 2, page...]: K then V of each page; contiguous() makes the memory order explicit
        pages = kv_pool[:, chunk].transpose(0, 1).contiguous()
        raw = pages.view(torch.uint8).flatten()
        s1, s2 = _weighted_sums(raw)
        n = raw.numel()
        # appending n bytes to state (a, b): a += S1, b += n * a + S2 (all mod MOD)
        b = (b + n * a + s2) % MOD
        a = (a + s1) % MOD
    return (b << 16) | a
