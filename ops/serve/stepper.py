"""Which engine event comes next, for the requests in flight only.

``Cluster.enabled()`` offers every free page to each queued request: right for traces,
quadratic for a server that lives for thousands of requests. The server asks the same
enumeration for its live requests only, with ``alloc`` for the page the allocator would
hand out anyway, and leaves the choice to the engine's own scheduler
policy (most recently freed page, one reservation at a time, writes land in posting order).
Timed events (a prefill still computing, an RDMA write still travelling) are held back by
the caller, never by the engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.faults import NO_FAULTS
from kvproof.refimpl.scheduler import Scheduler


def live_enabled(cluster: Cluster, rids: Iterable[int]) -> list[Event]:
    """The enabled events of requests ``rids`` (ascending) plus every in-flight write's
    ``land``; ``alloc`` for the allocator's next page only (refimpl's one enumeration)."""
    return cluster.enabled(sorted(rids), alloc="top")


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
