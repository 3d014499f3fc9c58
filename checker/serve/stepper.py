"""Which engine event comes next, for the requests in flight only.

``Cluster.enabled()`` enumerates every request ever submitted (and every free page for each
queued one): right for traces, quadratic for a server that lives for thousands of requests.
This enumerates the same events for the live requests only, offers ``alloc`` for the page
the allocator would hand out anyway, and leaves the choice to the engine's own scheduler
policy (most recently freed page, one reservation at a time, writes land in posting order).
Timed events (a prefill still computing, an RDMA write still travelling) are held back by
the caller, never by the engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import EVENT_NAMES, PAGE_EVENTS, Event
from kvproof.refimpl.faults import NO_FAULTS
from kvproof.refimpl.scheduler import Scheduler

REQUEST_EVENTS = tuple(n for n in EVENT_NAMES if n not in PAGE_EVENTS)


def live_enabled(cluster: Cluster, rids: Iterable[int]) -> list[Event]:
    """The enabled events of requests ``rids`` plus every in-flight write's ``land``."""
    h = cluster.handoff
    top = h.decode.alloc.peek()
    out: list[Event] = []
    for r in rids:
        out += [ev for ev in (Event(n, r) for n in REQUEST_EVENTS) if h.can(ev)]
        if not h.requests[r].arrived:
            continue
        if top is not None and h.d[r].phase == "queued" and h.can(Event("alloc", r, top)):
            out.append(Event("alloc", r, top))
        dst = h.p[r].dst if h.push else h.d[r].table
        for page in dst[: h.sender_pages(r)]:
            if h.can(Event("post", r, page)):
                out.append(Event("post", r, page))
    out += [Event("land", t.rid, t.page) for t in h.transfer.in_flight.values()]
    return out


class Policy:
    """The engine scheduler's choice among enabled events, without its fault injection
    (``refimpl.scheduler.Scheduler`` with ``NO_FAULTS``: it keeps no per-event memory)."""

    def __init__(self, cluster: Cluster) -> None:
        self._sched = Scheduler(cluster, faults=NO_FAULTS)

    def progress(self, enabled: list[Event]) -> Event | None:
        return self._sched.progress(enabled)

    def environment(self, enabled: list[Event]) -> Event | None:
        """Nothing can progress: a drain timeout (deferred_timeout) or a stuck client."""
        return self._sched.environment(enabled)
