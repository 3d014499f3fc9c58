"""Per-page owner tags with a generation counter (Cloudflare's prototype).

A tag ``make_tag(rid, generation)`` travels with the bytes: decode gives prefill the tag of
its reservation with the destination indices; prefill stamps it into its own pool's tag
array on the pages it computes; a transfer reads the source page's tag with its bytes and
the landing write stamps it on the destination. Decode's guarded kernel compares every
page's tag with the reader's before reading; a late write from an earlier owner, a page
nobody wrote since the allocation, or a source block reused by other traffic carries a
foreign tag. No tag is derived from the run's ground truth (``refimpl/recorder.py``).

The check is a pure function of the tags of the pages read and the reader's tag, so a read
may reuse the reader's last passed check when neither changed since. A passed check records
the pages it covered, and each of those pages records its checked readers (``_readers``,
the reverse index). Every tag write goes through ``stamp_tag``, which drops the passed
check of every reader of the page it writes: a late RDMA write into a checked page (the
attack the guard exists for) leaves no check to reuse, so the next read re-runs the
guarded kernel and trips. The tensor's own version counter backs this up: an in-place
torch write that bypassed ``stamp_tag`` drops every passed check (seen before a check is
reused and before the next stamp, which would otherwise adopt the new version as its own).

A read that grows past its passed check by decode's own tail pages (a new page every
``page_size`` generated tokens) reuses it too: decode stamped those pages itself with the
reader's tag (``stamp``) and nothing wrote them since, so the check over the longer read
is the passed one and the new pages', which are known. Any other write into them, through
``stamp_tag`` (a transfer landing) or behind its back, makes the kernel run again. This
cut the guarded kernel from 4 runs per request to 1 (its commit read) in
``benchmarks/engine.py``'s workload.

Why a reverse index rather than a write-version per page compared at each read: the test
runs on every decode step. Comparing the write version of every page read cost a Python
loop over the read (~27 pages; 1.7 us in a loop, 3-5 us in the workload) whenever any
other request had stamped a page since, which in a busy engine is nearly always;
``benchmarks/guard_instructions.py`` counted it as 7.6 M of the guards' 19.8 M decode
instructions a run, the largest part. With the index, writes pay (a dict lookup, and a walk
over a reader's pages only when a checked page is rewritten) and reads one list compare:
the read's list against the passed one, with no copy (copying a slice first made the test
5.2 k instructions a step; the compare itself is ~0.3 k of the ~2.5 k left).
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
        self._tensor_version = self.tags._version
        # rid -> pages read by its last check that passed, none of whose tags was written since
        self._passed: dict[int, list[int]] = {}
        # page -> rids whose entry in ``_passed`` covers it (exactly the inverse of _passed)
        self._readers: dict[int, set[int]] = {}
        # page -> tag of decode's own stamp (``stamp``), while it is the last write
        self._own: dict[int, int] = {}

    def new_generation(self, rid: int) -> int:
        gen = self._next_generation
        self._next_generation += 1
        self.generation[rid] = gen
        self._expected.pop(rid, None)
        self.invalidate(rid)  # its tag changed: no earlier check says anything
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
        self.invalidate(rid)

    def invalidate(self, rid: int) -> None:
        """Drop ``rid``'s passed check: its next guarded read runs the kernel again."""
        pages = self._passed.pop(rid, None)
        if pages is None:
            return
        for page in pages:
            readers = self._readers.get(page)
            if readers is not None:
                readers.discard(rid)
                if not readers:
                    del self._readers[page]

    def tag_of(self, rid: int | None) -> int:
        if rid is None or rid not in self.generation:
            return NO_TAG
        return make_tag(rid, self.generation[rid])

    def stamp(self, page: int, rid: int | None) -> None:
        """Stamp ``rid``'s current tag (decode writing its own slots)."""
        tag = self.tag_of(rid)
        self.stamp_tag(page, tag)
        self._own[page] = tag

    def tag_at(self, page: int) -> int:
        """The tag a transfer reads with the page's bytes."""
        return int(self.tags[page])

    def stamp_tag(self, page: int, tag: int) -> None:
        """Stamp a tag value (one carried by a transfer descriptor, or prefill's)."""
        self._drop_all_if_written_behind_stamp()  # before this write's version hides it
        self.tags[page] = tag
        self.version += 1
        self._own.pop(page, None)
        for rid in list(self._readers.get(page, ())):  # their checks covered the old tag
            self.invalidate(rid)
        self._tensor_version = self.tags._version

    def _drop_all_if_written_behind_stamp(self) -> bool:
        """True, and every passed check dropped, when a torch write bypassed ``stamp_tag``
        since the last look (the tensor's version moved): which page is unknown."""
        if self.tags._version == self._tensor_version:
            return False
        self.version += 1
        self._passed.clear()
        self._readers.clear()
        self._own.clear()
        self._tensor_version = self.tags._version
        return True

    def unchanged(self, rid: int, pages: Sequence[int]) -> bool:
        """True when ``rid`` passed a check over exactly ``pages`` (the ones a read uses)
        and no tag among them was written since: the check would pass again. Also when
        ``pages`` extends the checked ones by pages decode stamped with ``rid``'s tag
        and nothing wrote since (see the module docstring); that check is then recorded."""
        seen = self._passed.get(rid)
        if seen is None:  # nothing to reuse, whatever was written
            return False
        if self._drop_all_if_written_behind_stamp():
            return False
        if pages == seen:  # the common case (a list, no new page): no copy, one compare
            return True
        n = len(seen)
        if len(pages) < n or list(pages[:n]) != seen:
            return False
        if len(pages) == n:
            return True
        tag = self.tag_of(rid)
        grown = list(pages[n:])
        if any(self._own.get(page) != tag for page in grown):
            return False
        seen.extend(grown)
        for page in grown:
            self._readers.setdefault(page, set()).add(rid)
        return True

    def passed(self, rid: int, pages: Sequence[int], version: int) -> None:
        """``rid``'s guarded read over ``pages``, with tags as of ``version``, passed.
        A tag written since ``version`` may postdate the check: then nothing is recorded."""
        self.invalidate(rid)
        self._drop_all_if_written_behind_stamp()
        if version != self.version:
            return
        self._passed[rid] = list(pages)
        for page in pages:
            self._readers.setdefault(page, set()).add(rid)
