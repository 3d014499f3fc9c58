"""What every rule reads and moves: the nodes, the switches, the flights; and the rule shape.

A rule is one event of ``spec/handoff.md`` as the engine performs it: a guard (may it
happen now?) and an effect (do it), both on one ``Flight``. The facts several events
share live here once, as the model's do in ``model/handoff/rules/guards.py``
(``no_inflight``, ``free_pages_of``). ``Handoff`` (``refimpl/handoff.py``) is a
``Context`` that adds the dispatch and prefill's own bookkeeping between events; the
rules know only this class, never the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvproof.refimpl.decode import DecodeNode
from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.prefill import PrefillNode, PrefillReq
from kvproof.refimpl.transfer import TransferEngine
from kvproof.spec.variant import Switches


class Context:
    def __init__(
        self, switches: Switches, prefill: PrefillNode, decode: DecodeNode, transfer: TransferEngine
    ) -> None:
        self.sw = switches
        self.push = switches.transfer_mode == "push"
        self.prefill = prefill
        self.decode = decode
        self.transfer = transfer
        self.flights: list[Flight] = []  # by request id

    def sender_pages(self, f: Flight) -> int:
        """Pages the sender writes: its prompt's (1 for a placeholder) less decode's hit."""
        return self.prefill.pages_for(f.p) - f.d.hit_pages

    def targets(self, f: Flight) -> list[int]:
        """Destination pages the sender writes, in position order: source page i goes to
        the i-th index it was given (SGLang sends ``kv_indices[:len(prefill_pages)]``)."""
        dst = f.p.dst if self.push else f.d.table
        return dst[: self.sender_pages(f)]

    def inflight(self, f: Flight) -> bool:
        """A write of ``f`` is posted and has not landed (the model's ``inflight(r, p)``
        for some page)."""
        r = f.rid
        return any(t.rid == r for t in self.transfer.in_flight.values())

    def all_posted(self, f: Flight) -> bool:
        return all(page in f.p.posted for page in self.targets(f))

    def free_decode(self, f: Flight) -> None:
        """Decode releases every page of ``f`` (the model's ``free_pages_of``)."""
        self.decode.release(f.d)
        f.d.phase = "done"

    def compute(self, p: PrefillReq) -> None:
        """Prefill runs the prompt (once)."""
        if p.computed:
            return
        self.prefill.compute(p)
        if not p.src_ok:  # the lease expired before the prefill ran: the blocks go at once
            self.prefill.release(p, reused=True)


Guard = Callable[[Context, Flight, Event], bool]
Effect = Callable[[Context, Flight, Event], None]


@dataclass(frozen=True)
class Rule:
    """One event: when the engine may perform it, and what performing it does."""

    name: str  # as in spec/events.py
    guard: Guard
    effect: Effect
