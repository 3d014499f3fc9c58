"""A node's KV pool: one tensor in the kernels' layout, allocated once, never zeroed.

``data[layer]`` is exactly the kernels' ``[2, num_pages, page_size, num_kv_heads, head_dim]``
pool. Real engines never clear a page between requests (zeroing costs throughput), so a page
keeps whatever was written last. We start the pool with seeded noise rather than
``torch.empty``'s arbitrary bytes: the same leftovers, but reproducible run to run.

Next to the bytes, the pool keeps its owner-tag array (``tags``, ``refimpl/tags.py``): the
node that writes KV into a page stamps the tag of the KV's owner, and the tag travels with
the bytes in a transfer. Who really wrote what is not kept here: that is ground truth, and
lives in the run's ``Recorder`` (``refimpl/recorder.py``), which the engine never reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

try:
    # zlib-ng's Adler-32 is vectorised: ~3 us for a transfer's 216 KiB in
    # benchmarks/engine.py's workload, against ~58 us for zlib 1.2's scalar loop (the larger
    # part of the decode guards' cost). Same function, same values; zlib if it is missing.
    from zlib_ng.zlib_ng import adler32
except ImportError:  # pragma: no cover - zlib-ng is a dependency; an install may lack it
    from zlib import adler32

from kvproof.kernels import KernelInputError, page_checksum
from kvproof.refimpl.tags import NO_TAG, PageTags


@dataclass(frozen=True)
class PoolGeometry:
    num_layers: int
    num_pages: int
    page_size: int
    num_kv_heads: int
    head_dim: int

    @property
    def shape(self) -> tuple[int, ...]:
        return (
            self.num_layers,
            2,
            self.num_pages,
            self.page_size,
            self.num_kv_heads,
            self.head_dim,
        )


class KVPool:
    def __init__(self, geometry: PoolGeometry, *, device: str = "cpu", seed: int = 0) -> None:
        self.geometry = geometry
        self.page_size = geometry.page_size
        self.num_layers = geometry.num_layers
        gen = torch.Generator().manual_seed(seed)
        self.data = torch.randn(geometry.shape, generator=gen).to(device)
        self._gen = gen
        # CPU pools: the raw bytes as a numpy view (shared storage, no copy) for Adler-32,
        # seen as [layers, page, K/V, page bytes]: a gather over pages yields K then V of
        # each page, the order the checksum runs in.
        self._by_page: np.ndarray | None = None
        if not self.data.is_cuda:
            raw = self.data.view(torch.uint8).numpy()
            self._by_page = raw.reshape(*geometry.shape[:3], -1).transpose(0, 2, 1, 3)
        self.tags = PageTags(geometry.num_pages, device=self.data.device)

    @property
    def device(self) -> torch.device:
        return self.data.device

    def layer(self, index: int) -> torch.Tensor:
        """The kernels' view of one layer: ``[2, num_pages, page_size, H_kv, D]``."""
        return self.data[index]

    def snapshot(self, page: int) -> torch.Tensor:
        """A copy of one page across layers (what an RDMA write reads from the source)."""
        return self.data[:, :, page].clone()

    def put(self, page: int, snapshot: torch.Tensor) -> None:
        """Overwrite one page with a snapshot (the RDMA write landing)."""
        self.data[:, :, page].copy_(snapshot)

    def scribble(self, page: int) -> None:
        """Other traffic reuses the page: its bytes become someone else's KV."""
        noise = torch.randn(self.data[:, :, page].shape, generator=self._gen)
        self.data[:, :, page].copy_(noise.to(self.device))
        self.tags.stamp_tag(page, NO_TAG)  # other traffic's KV: no tag of this cluster

    def checksum(self, pages: list[int]) -> tuple[int, ...]:
        """Adler-32 of the pages, one per layer (SGLang #39500 checks it at commit)."""
        if not pages:
            return ()
        if self._by_page is None:  # on the device: only the 32-bit sums cross to the host
            return tuple(page_checksum(self.layer(i), pages) for i in range(self.num_layers))
        # On CPU: one gather of the pages into K-then-V order, then one Adler-32 per layer
        # over it (page_checksum's byte order). One call over the pages costs less than a
        # chained call per K and V block (2 per page per layer), whose Python overhead
        # outweighs a vectorised sum; the copy is a few microseconds.
        if min(pages) < 0 or max(pages) >= self.geometry.num_pages:  # numpy would wrap -1
            raise KernelInputError(f"page ids must lie in [0, {self.geometry.num_pages})")
        gathered = np.ascontiguousarray(self._by_page[:, pages])  # [layers, n, 2, bytes]
        return tuple(adler32(layer) for layer in gathered)
