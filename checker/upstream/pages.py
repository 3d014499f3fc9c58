"""Who owns each decode page, as the code decides it: the recorder of page owners.

The model chooses which page a request gets (``alloc``); the code decides when it is given
back (``release_kv_cache``, called by the release's ``pop_transferred`` and
``_do_release``). A write that lands on a page its writer no longer owns is a stray write;
a page handed to a new owner while a write to it is in flight is a reuse in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Pages:
    owner: dict[int, int] = field(default_factory=dict)  # page -> request
    inflight: set[tuple[int, int]] = field(default_factory=set)  # (request, page)
    stray: set[int] = field(default_factory=set)
    reused_inflight: set[int] = field(default_factory=set)
    released: list[int] = field(default_factory=list)  # requests, in release order

    def alloc(self, r: int, p: int) -> None:
        if any(q == p and w != r for w, q in self.inflight):
            self.reused_inflight.add(p)
        self.owner[p] = r

    def release(self, r: int) -> None:
        """``release_kv_cache`` for request ``r``: every page it owns goes back."""
        self.released.append(r)
        for p in [p for p, w in self.owner.items() if w == r]:
            del self.owner[p]

    def of(self, r: int) -> frozenset[int]:
        return frozenset(p for p, w in self.owner.items() if w == r)

    def post(self, r: int, p: int) -> None:
        self.inflight.add((r, p))

    def land(self, r: int, p: int) -> None:
        self.inflight.discard((r, p))
        if self.owner.get(p) != r:
            self.stray.add(p)
