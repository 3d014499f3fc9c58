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

import functools
from dataclasses import dataclass

import torch

try:
    # zlib-ng's Adler-32 is vectorised: 13 against 63 us for a transfer's 26 pages (216 KiB)
    # of benchmarks/engine.py's workload in cache, 68-80 against 101 us with the pages cold
    # (as they are at commit). Same function, same values; zlib if it is missing.
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


@functools.lru_cache(maxsize=32)
def _first_draw(shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.randn(shape)`` from ``seed``, and the generator's state after the draw.
    Remembered per shape and seed: a fuzz campaign builds two pools per walk, and drawing
    them was its largest single cost (issue 30). Callers copy the tensor, never write it."""
    gen = torch.Generator().manual_seed(seed)
    noise = torch.randn(shape, generator=gen)
    return noise, gen.get_state()


def _seeded_noise(shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor, torch.Generator]:
    """The first draw from ``seed`` and a generator in the state it leaves (a ``scribble``
    draws on from there): a copy of the remembered draw holds the same bytes."""
    noise, state = _first_draw(shape, seed)
    gen = torch.Generator()
    gen.set_state(state)
    return noise, gen


class KVPool:
    def __init__(
        self, geometry: PoolGeometry, *, device: str = "cpu", seed: int = 0, checksum: bool = False
    ) -> None:
        self.geometry = geometry
        self.page_size = geometry.page_size
        self.num_layers = geometry.num_layers
        noise, self._gen = _seeded_noise(geometry.shape, seed)
        self.data = noise.to(device, copy=True)
        # CPU pools: one memoryview per (layer, K/V, page) over the tensor's own bytes (no
        # copy) for Adler-32 (``_page_views``): built here for a node that checksums its
        # pages (``checksum``), like the tag array, else on the first checksum.
        self._views: list[tuple[list[memoryview], list[memoryview]]] | None = None
        if checksum and not self.data.is_cuda:
            self._page_views()
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

    def _page_views(self) -> list[tuple[list[memoryview], list[memoryview]]]:
        """Per layer, the K and the V block of every page as a flat memoryview of its bytes.
        Indexing a list of views costs a tenth of what a numpy row view per page and call
        did (``benchmarks/guard_instructions.py``: 292 k instructions a transfer, most of
        them building views; the sums themselves are ~74 k). They cost ~0.2 KiB per page,
        layer and K/V, against the page's own bytes."""
        if self._views is None:
            raw = self.data.view(torch.uint8).numpy()  # shared storage: the views see writes
            self._views = [
                (
                    [memoryview(page).cast("B") for page in layer[0]],
                    [memoryview(page).cast("B") for page in layer[1]],
                )
                for layer in raw
            ]
        return self._views

    def checksum(self, pages: list[int]) -> tuple[int, ...]:
        """Adler-32 of the pages, one per layer (SGLang #39500 checks it at commit)."""
        if not pages:
            return ()
        if self.data.is_cuda:  # on the device: only the 32-bit sums cross to the host
            return tuple(page_checksum(self.layer(i), pages) for i in range(self.num_layers))
        # On CPU there is no copy to avoid: Adler-32 runs over each page's K then V block
        # in place, chained page by page; the same bytes, in the same order, as
        # page_checksum's contract (its torch version costs ~20x more on small pages).
        # Gathering the pages first for one call per layer cost more than the 2 calls per
        # page and layer it saves: the pages are cold at commit, and the copy adds misses.
        if min(pages) < 0 or max(pages) >= self.geometry.num_pages:  # lists would wrap -1
            raise KernelInputError(f"page ids must lie in [0, {self.geometry.num_pages})")
        out = []
        for k, v in self._page_views():
            a = 1
            for page in pages:
                a = adler32(v[page], adler32(k[page], a))
            out.append(a)
        return tuple(out)
