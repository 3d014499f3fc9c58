"""Ground truth of a run: whose KV each page's bytes really are, stray writes, stale reads.

One recorder per cluster. The engine writes to it at the moments the truth changes (prefill
computes KV into a page, other traffic reuses a page, a transfer reads its source, a write
lands, decode allocates or reads a page) and never reads it: no guard, status or choice of
the engine depends on it, so a bug in the engine's own bookkeeping (its owner tags, its
page tables) cannot hide behind it. ``Cluster.view()`` (the abstraction the checker compares
with the model) and the leak oracle (``refimpl/oracle.py``) read it.
``tests/refimpl/test_recorder_layering.py`` checks that engine modules only call the writers below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PREFILL, DECODE = "prefill", "decode"


@dataclass(frozen=True)
class PageRead:
    """One page as a decode read saw it, from the ground truth (for the leak report)."""

    index: int  # position of the page in the request's table
    page: int
    writer: int | None  # whose KV the bytes are (None: from outside the cluster)
    filled: bool  # a write landed since this allocation
    valid: int  # leading slots holding the writer's real tokens
    read: int  # prompt slots of the page the read used
    # The last write was its writer's KV, every slot decode reads, at the chunk index the
    # writer's table gives the page (False: a placeholder's leftovers, a misplaced chunk).
    at_pos: bool = True

    @property
    def stale_for_reader(self) -> bool:
        return not self.filled or self.valid < self.read or not self.at_pos

    def stale_for(self, rid: int) -> bool:
        return self.writer != rid or self.stale_for_reader


@dataclass
class PoolTruth:
    """Per page of one node's pool."""

    writer: list[int | None]  # None: bytes from outside this cluster (boot, other traffic)
    valid: list[int]  # leading slots holding the writer's real tokens
    filled: list[bool]  # decode: a write landed since the page's current allocation
    stray: list[bool]  # decode: a write landed while its writer did not own the page
    # decode (issue 12 item 3): the last write was exact, every slot at its chunk index
    at_pos: list[bool]

    @classmethod
    def empty(cls, num_pages: int) -> PoolTruth:
        n = num_pages
        return cls([None] * n, [0] * n, [False] * n, [False] * n, [False] * n)


@dataclass
class Recorder:
    prefill: PoolTruth
    decode: PoolTruth
    # rid -> the distinct stale pages its decode reads saw
    stale_reads: dict[int, list[PageRead]] = field(default_factory=dict)
    # transfer seq -> (writer, valid) of the source page when the transfer read it
    _carried: dict[int, tuple[int | None, int]] = field(default_factory=dict)
    # decode's radix cache (issue 12 item 4): page -> it still holds the KV it was inserted
    # with (its inserter's own, every slot at position); pages a write hit while mapped
    prefix_ok: dict[int, bool] = field(default_factory=dict)
    shared_write: set[int] = field(default_factory=set)

    @classmethod
    def for_pools(cls, prefill_pages: int, decode_pages: int) -> Recorder:
        return cls(PoolTruth.empty(prefill_pages), PoolTruth.empty(decode_pages))

    # -- writers: the engine calls these, and only these -----------------------------------
    def computed(self, page: int, rid: int, valid: int) -> None:
        """Prefill wrote ``valid`` slots of ``rid``'s KV into its page."""
        self.prefill.writer[page], self.prefill.valid[page] = rid, valid

    def reused(self, page: int, page_size: int) -> None:
        """Other traffic overwrote a prefill page (lease expiry, vLLM #52234)."""
        self.prefill.writer[page], self.prefill.valid[page] = None, page_size

    def carried(self, seq: int, src: int) -> None:
        """Transfer ``seq`` read prefill page ``src`` (push: at post; pull: at landing)."""
        self._carried[seq] = (self.prefill.writer[src], self.prefill.valid[src])

    def landed(self, seq: int, page: int, rid: int, owner: int | None) -> None:
        """Transfer ``seq`` of ``rid`` landed in decode page ``page``, owned by ``owner``."""
        d = self.decode
        d.writer[page], d.valid[page] = self._carried.pop(seq)
        d.filled[page] = True
        if owner != rid:
            d.stray[page] = True

    def positioned(self, page: int, chunk: bool, wanted: int) -> None:
        """The write that just landed in decode page ``page`` was meant to carry its writer's
        chunk at the page's index (``chunk``: the source was that chunk) and fill the
        ``wanted`` slots decode reads there: at_pos iff both (Handoff._do_land)."""
        d = self.decode
        d.at_pos[page] = chunk and d.valid[page] >= wanted

    def inserted(self, page: int, rid: int) -> None:
        """Decode's radix tree now maps ``page`` (``rid``'s first chunk)."""
        d = self.decode
        self.prefix_ok[page] = d.writer[page] == rid and d.filled[page] and d.at_pos[page]

    def landed_shared(self, page: int) -> None:
        """A write just landed in ``page`` while the radix tree mapped it."""
        self.prefix_ok[page] = False
        self.shared_write.add(page)

    def read_shared(self, rid: int, pages: list[tuple[int, int, int]]) -> None:
        """A decode read of ``rid`` over head pages locked in the radix tree."""
        d = self.decode
        for index, page, used in pages:
            if self.prefix_ok.get(page, False):
                continue
            seen = PageRead(index, page, d.writer[page], d.filled[page], d.valid[page], used, False)
            stale = self.stale_reads.setdefault(rid, [])
            if seen not in stale:
                stale.append(seen)

    def allocated(self, page: int) -> None:
        """Decode allocated the page: a fresh allocation, its bytes not cleared."""
        self.decode.filled[page] = False
        self.decode.at_pos[page] = False

    def read(self, rid: int, pages: list[tuple[int, int, int]]) -> None:
        """A decode read of ``rid`` over ``(index, page, slots used)``."""
        d = self.decode
        writer, filled, valid, at_pos = d.writer, d.filled, d.valid, d.at_pos
        for index, page, used in pages:
            if writer[page] == rid and filled[page] and valid[page] >= used and at_pos[page]:
                continue  # fresh: the common case, kept cheap (it runs inside every read)
            seen = PageRead(
                index, page, writer[page], filled[page], valid[page], used, at_pos[page]
            )
            if seen.stale_for(rid):
                stale = self.stale_reads.setdefault(rid, [])
                if seen not in stale:
                    stale.append(seen)

    # -- readers: the view and the oracle --------------------------------------------------
    def reads_of(self, rid: int) -> list[PageRead]:
        return self.stale_reads.get(rid, [])

    def read_stale(self, rid: int) -> bool:
        """Ghost ``leaked``: some decode read of ``rid`` saw a page not holding its KV."""
        return bool(self.stale_reads.get(rid))
