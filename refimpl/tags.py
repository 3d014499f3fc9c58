"""Per-page owner tags with a generation counter (Cloudflare's prototype).

A tag ``make_tag(rid, generation)`` travels with the bytes: a landing write stamps the tag of
the request whose KV it carries, in that request's reservation generation. Decode's guarded
kernel compares every page's tag with the reader's before reading; a late write from an
earlier owner, or a page nobody wrote since the allocation, carries a foreign tag.
"""

from __future__ import annotations

import torch

from kvproof.kernels import make_tag

NO_TAG = -1


class PageTags:
    def __init__(self, num_pages: int, *, device: str | torch.device = "cpu") -> None:
        self.tags = torch.full((num_pages,), NO_TAG, dtype=torch.int64, device=device)
        self._next_generation = 1
        self.generation: dict[int, int] = {}  # rid -> generation of its current reservation
        # rid -> its current tag as a 1-element tensor on the pool's device: built once per
        # reservation, not per guarded decode step (no per-step host-to-device copy).
        self._expected: dict[int, torch.Tensor] = {}

    def new_generation(self, rid: int) -> int:
        gen = self._next_generation
        self._next_generation += 1
        self.generation[rid] = gen
        self._expected.pop(rid, None)
        return gen

    def expected(self, rid: int) -> torch.Tensor:
        """``int64 [1]`` tensor holding ``tag_of(rid)``, cached for the reservation."""
        t = self._expected.get(rid)
        if t is None:
            t = torch.tensor([self.tag_of(rid)], dtype=torch.int64, device=self.tags.device)
            self._expected[rid] = t
        return t

    def forget(self, rid: int) -> None:
        """The reservation ended: drop the cached tensor (the generation stays known)."""
        self._expected.pop(rid, None)

    def tag_of(self, rid: int | None) -> int:
        if rid is None or rid not in self.generation:
            return NO_TAG
        return make_tag(rid, self.generation[rid])

    def stamp(self, page: int, rid: int | None) -> None:
        self.tags[page] = self.tag_of(rid)
