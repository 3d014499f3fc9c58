"""The engine's handoff driver: dispatches each event to its rule, then settles prefill.

Each event of ``spec/handoff.md`` is a real engine operation (real KV, real bytes copied,
real paged decode), written as one rule in ``refimpl/rules/`` (a guard and an effect on
one request's ``Flight``); the switches select the upstream behaviour (cited in the
rules). ``Cluster`` is the public face, ``enabled.py`` the one enumeration of enabled
events. What is left here is not an event: which requests may still move, and prefill's
own bookkeeping between events (``settle``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kvproof.refimpl.decode import DecodeNode
from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.prefill import PrefillNode
from kvproof.refimpl.rules import RULES, Context, Rule
from kvproof.refimpl.transfer import TransferEngine
from kvproof.spec.variant import Switches


class Handoff(Context):
    def __init__(
        self, switches: Switches, prefill: PrefillNode, decode: DecodeNode, transfer: TransferEngine
    ) -> None:
        super().__init__(switches, prefill, decode, transfer)
        # One rule per event; a copy per engine, so that a test can plant a bug in one.
        self.rules: dict[str, Rule] = dict(RULES)
        # Requests that may still have an event (ascending rid): the enumeration and
        # settle() walk these only. A request leaves for good once it can never move again.
        self._live: dict[int, None] = {}
        self._known = 0  # requests already entered in _live

    def add(self, flight: Flight) -> None:
        """A request submitted (``Cluster.submit``): its ``arrive`` is still to come."""
        assert flight.rid == len(self.flights)
        self.flights.append(flight)

    # -- the events ------------------------------------------------------------------------
    def can(self, ev: Event) -> bool:
        r = ev.rid
        if not 0 <= r < len(self.flights):
            return False
        f = self.flights[r]
        if ev.name != "arrive" and not f.req.arrived:
            return False
        return self.rules[ev.name].guard(self, f, ev)

    def do(self, ev: Event) -> None:
        self.rules[ev.name].effect(self, self.flights[ev.rid], ev)
        self.settle()

    # -- which requests may still move -----------------------------------------------------
    def _sync(self) -> None:
        """Enter requests added since the last call as live."""
        for r in range(self._known, len(self.flights)):
            self._live[r] = None
        self._known = len(self.flights)

    def live(self) -> Iterable[int]:
        """The requests that may still have an event, ascending (a live view: do not
        apply events while iterating it)."""
        self._sync()
        return self._live.keys()

    def _retired(self, f: Flight) -> bool:
        """``f`` can never have an event again: decode is done, prefill neither waits nor
        sends nor holds pages, no write of it is in flight and no lease can expire. Every
        one of these is final (phases only move forward, ``src_ok`` only goes off)."""
        p = f.p
        return (
            f.req.arrived
            and f.d.phase == "done"
            and p.phase not in ("waiting", "active")
            and not p.held
            and not (not self.push and self.sw.prefill_hold == "lease" and p.src_ok)
            and not self.inflight(f)
        )

    # -- prefill's own bookkeeping ---------------------------------------------------------
    def settle(self) -> None:
        """P's own bookkeeping after each event: release drained requests, start prefills
        whose bootstrap completed. Not protocol events: the model sees decode's pages.

        Prefill computes a request only once decode has sent (``send``): push waits for the
        indices, pull computes at ``send``. SGLang's ``PrefillBootstrapQueue`` holds a
        request "whose bootstrap (handshake and preallocation) has not finished" until
        ``KVPoll`` says ``WaitingForInput`` (``pop_bootstrapped``); computing earlier is
        opt-in (``optimistic_prefill_attempts``, 0). Computing eagerly filled P's pool with
        prompts decode had no pages for: a burst deadlocked (tests/refimpl/test_burst.py).
        """
        self._sync()
        flights = self.flights
        for r in list(self._live):
            f = flights[r]
            p = f.p
            if p.held and not self.inflight(f):
                if self.push:
                    finished = p.phase in ("sent", "stopped")
                else:  # until_read: P keeps its blocks until decode's reads completed
                    finished = f.req.poll in ("success", "failed")
                    finished = finished or f.d.phase in ("running", "draining", "done")
                if finished:
                    self.prefill.release(p)
        for r in list(self._live):
            f = flights[r]
            p = f.p
            computing = p.phase == "active" and not p.computed and not p.dead
            if computing and self.prefill.can_compute(p):
                self.compute(p)
            if self._retired(f):
                del self._live[r]
