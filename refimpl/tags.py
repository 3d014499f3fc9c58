"""Per-page owner tags with a generation counter (Cloudflare's prototype).

A tag ``make_tag(rid, generation)`` travels with the bytes: decode gives prefill the tag of
its reservation with the destination indices; prefill stamps it into its own pool's tag
array on the pages it computes; a transfer reads the source page's tag with its bytes and
the landing write stamps it on the destination. Decode's guarded kernel compares every
page's tag with the reader's before reading; a late write from an earlier owner, a page
nobody wrote since the allocation, or a source block reused by other traffic carries a
foreign tag. No tag is derived from the run's ground truth (``refimpl/recorder.py``).

The check is a pure function of the tags of the pages read and the reader's tag, so a read
may reuse the reader's last passed check when neither changed since. Every tag write goes
through ``stamp``, which bumps ``version`` and records it as the page's last write; a
passed check records the pages it covered and the version it saw. A late RDMA write into
one of those pages (the attack the guard exists for) stamps it, so the next read re-runs
the guarded kernel and trips. The tensor's own version counter backs this up: an in-place
torch write that bypassed ``stamp`` invalidates every passed check.

A read that grows past its passed check by decode's own tail pages (a new page every
``page_size`` generated tokens) reuses it too: decode stamped those pages itself with the
reader's tag (``stamp``) and nothing wrote them since, so the check over the longer read
is the passed one and the new pages', which are known. Any other write into them, through
``stamp_tag`` (a transfer landing) or behind its back, makes the kernel run again. This
cut the guarded kernel from 4 runs per request to 1 (its commit read) in
``benchmarks/engine.py``'s workload.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kvproof.kernels import make_tag

NO_TAG = -1


class PageTags:
    def __init__(self, num_pages: int, *, device: str | torch.device = "cpu") -> None:
        # A normal (not inference) tensor even when built under inference_mode: only those
        # keep the version counter that ``unchanged`` reads.
        with torch.inference_mode(False):
            self.tags = torch.full((num_pages,), NO_TAG, dtype=torch.int64, device=device)
        self._next_generation = 1
        self.generation: dict[int, int] = {}  # rid -> generation of its current reservation
        # rid -> its current tag as a 1-element tensor on the pool's device: built once per
        # reservation, not per guarded decode step (no per-step host-to-device copy).
        self._expected: dict[int, torch.Tensor] = {}
        self.version = 0  # bumped by every tag write
        self._written_at = [0] * num_pages  # page -> version of its last tag write
        self._all_written_at = 0  # version of the last write we could not place (see above)
        self._tensor_version = self.tags._version
        # rid -> (pages read, version) of its last check that passed
        self._passed: dict[int, tuple[tuple[int, ...], int]] = {}
        # page -> (tag, version) of decode's own stamp (``stamp``), while it is the last write
        self._own: dict[int, tuple[int, int]] = {}

    def new_generation(self, rid: int) -> int:
        gen = self._next_generation
        self._next_generation += 1
        self.generation[rid] = gen
        self._expected.pop(rid, None)
        self._passed.pop(rid, None)  # its tag changed: no earlier check says anything
        return gen

    def expected(self, rid: int) -> torch.Tensor:
        """``int64 [1]`` tensor holding ``tag_of(rid)``, cached for the reservation."""
        t = self._expected.get(rid)
        if t is None:
            t = torch.tensor([self.tag_of(rid)], dtype=torch.int64, device=self.tags.device)
            self._expected[rid] = t
        return t

    def forget(self, rid: int) -> None:
        """The reservation ended: drop the cached tensor and check (the generation stays)."""
        self._expected.pop(rid, None)
        self._passed.pop(rid, None)

    def invalidate(self, rid: int) -> None:
        """Drop ``rid``'s passed check: its next guarded read runs the kernel again."""
        self._passed.pop(rid, None)

    def tag_of(self, rid: int | None) -> int:
        if rid is None or rid not in self.generation:
            return NO_TAG
        return make_tag(rid, self.generation[rid])

    def stamp(self, page: int, rid: int | None) -> None:
        """Stamp ``rid``'s current tag (decode writing its own slots)."""
        tag = self.tag_of(rid)
        self.stamp_tag(page, tag)
        self._own[page] = (tag, self.version)

    def tag_at(self, page: int) -> int:
        """The tag a transfer reads with the page's bytes."""
        return int(self.tags[page])

    def stamp_tag(self, page: int, tag: int) -> None:
        """Stamp a tag value (one carried by a transfer descriptor, or prefill's)."""
        self.tags[page] = tag
        self.version += 1
        self._written_at[page] = self.version
        self._own.pop(page, None)
        self._tensor_version = self.tags._version

    def unchanged(self, rid: int, pages: Sequence[int]) -> bool:
        """True when ``rid`` passed a check over exactly ``pages`` (the ones a read uses)
        and no tag among them was written since: the check would pass again. Also when
        ``pages`` extends the checked ones by pages decode stamped with ``rid``'s tag
        and nothing wrote since (see the module docstring); that check is then recorded."""
        if self.tags._version != self._tensor_version:  # written behind stamp()'s back
            self.version += 1
            self._all_written_at = self.version
            self._tensor_version = self.tags._version
        passed = self._passed.get(rid)
        if passed is None:
            return False
        seen_pages, seen = passed
        n = len(seen_pages)
        if len(pages) < n or seen < self._all_written_at:
            return False
        written_at = self._written_at
        if seen == self.version:  # no tag anywhere written since: only the pages matter
            same = all(a == b for a, b in zip(seen_pages, pages[:n], strict=True))
        else:
            same = all(
                a == b and written_at[a] <= seen for a, b in zip(seen_pages, pages, strict=False)
            )
        if not same or len(pages) == n:
            return same
        tag = self.tag_of(rid)
        for page in pages[n:]:
            own = self._own.get(page)
            if own is None or own[0] != tag or own[1] != written_at[page]:
                return False
        self._passed[rid] = (tuple(pages), self.version)
        return True

    def passed(self, rid: int, pages: Sequence[int], version: int) -> None:
        """``rid``'s guarded read over ``pages``, with tags as of ``version``, passed."""
        self._passed[rid] = (tuple(pages), version)
