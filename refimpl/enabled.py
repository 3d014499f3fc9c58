"""The one enumeration of the engine's enabled events.

``Cluster.enabled()`` (traces, replay, the seeded scheduler) and the long-lived server
(``ops/serve``, ``alloc="top"``) both ask this; ``can`` stays the definition
(``tests/refimpl/test_burst.py`` checks the walk against every candidate ``can`` allows).

Order: requests by id, each one's own events in ``EVENT_NAMES`` order, then its ``alloc``
events (every free page in the free list's order, or only the page the allocator would
hand out next), then its ``post`` events in sender order, then its ``insert``/``share``
events (radix cache); last, every in-flight write's ``land`` in posting order. Each
request is offered only the events its phases allow (every guard of ``can`` requires one
of them), then ``can`` decides. ``crash`` and ``stale_ack`` are never offered: a dying
peer and a late message from outside the run come only from a replay that forces them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kvproof.refimpl.events import Event
from kvproof.refimpl.handoff import Handoff

Alloc = Literal["every", "top"]


class EnabledEvents:
    def __init__(self, handoff: Handoff) -> None:
        self.h = handoff
        # rid -> alloc(rid, page) by page, for requests still reserving ("every" only)
        self._alloc_events: dict[int, list[Event]] = {}

    def __call__(self, rids: Iterable[int], alloc: Alloc = "every") -> list[Event]:
        """The enabled events of requests ``rids`` (ascending) and every ``land``.
        ``alloc="every"``: an ``alloc`` for every free page of a request still reserving
        (exactly ``can``'s condition, from one pass over the free list); ``"top"``: only
        for the allocator's next page (what its policy hands out anyway)."""
        h = self.h
        free: list[int] | None = None
        push, lease = h.push, h.sw.prefill_hold == "lease"
        radix = h.sw.radix_cache != "off"
        out: list[Event] = []
        queued: list[int] = []
        flights = h.flights
        for r in rids:
            f = flights[r]
            p, d = f.p, f.d
            if not f.req.arrived:
                out.append(Event("arrive", r))
                continue
            dp, pp = d.phase, p.phase
            p_open = pp in ("waiting", "active")
            sending = pp == "active" if push else dp == "transfer"
            names: list[str] = []
            if dp == "queued":
                names.append("send")
            if push and p_open:
                names.append("p_abort")
            if sending:
                names += ("done", "fail")
            if dp == "transfer":
                names.append("commit")
            elif dp == "running":
                names += ("step", "finish")
            if dp in ("queued", "transfer", "running"):
                names.append("abort")
            if push and p_open:
                names.append("abort_seen")
            if dp == "draining":
                names += ("ack", "timeout")
            if lease and not push:
                names.append("expire")
            if push and pp == "active" and h.sw.prefill_hold == "early_free":
                names.append("expire")
            if push and p_open and lease:  # vLLM NIXL push (refimpl/rules/expire.py)
                names.append("expire")
            if dp == "transfer" and h.sw.decode_gives_up != "never":
                names.append("give_up")
            out += [ev for ev in map(Event, names, [r] * len(names)) if h.can(ev)]
            if dp == "queued" and len(d.table) < d.reserve:
                if free is None:
                    free = self._free(alloc)
                out += self._allocs(r, free, alloc)
                queued.append(r)
            if sending:
                posts = (Event("post", r, page) for page in dict.fromkeys(h.targets(f)))
                out += [ev for ev in posts if h.can(ev)]
            if radix and dp in ("queued", "running"):  # decode's radix cache (issue 12)
                pages = d.table if dp == "running" else list(h.decode.tree.key)
                name = "insert" if dp == "running" else "share"
                out += [ev for ev in (Event(name, r, pg) for pg in pages) if h.can(ev)]
        out += [Event("land", t.rid, t.page) for t in h.transfer.in_flight.values()]
        if len(self._alloc_events) > len(queued):  # forget requests no longer reserving
            self._alloc_events = {
                r: self._alloc_events[r] for r in queued if r in self._alloc_events
            }
        return out

    def _free(self, alloc: Alloc) -> list[int]:
        a = self.h.decode.alloc
        if alloc == "top":
            top = a.peek()
            return [] if top is None or not a.is_free(top) else [top]
        return [page for page in a.free_pages() if a.is_free(page)]

    def _allocs(self, r: int, free: list[int], alloc: Alloc) -> list[Event]:
        if alloc == "top":
            return [Event("alloc", r, page) for page in free]
        events = self._alloc_events.get(r)
        if events is None:
            events = [Event("alloc", r, page) for page in range(self.h.decode.num_pages)]
            self._alloc_events[r] = events
        return [events[page] for page in free]
