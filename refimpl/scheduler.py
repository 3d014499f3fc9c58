"""The seeded scheduler: picks among enabled events, injects the FaultPlan's faults.

Progress events are chosen at random (that is what interleaves requests), with two
policies of real engines: the allocator's own choice of page (the most recently freed), and
one reservation at a time (so two half-allocated requests cannot deadlock the pool).
Writes complete in posting order unless the plan reorders them. When nothing can progress
(a lost message, a full pool) the environment moves: a drain timeout, or the client gives up.

``Scheduler`` is public: a driver that steps the engine itself (``ops/serve``: timed
events, its own notion of live requests) asks it for the policy's choice::

    sched = Scheduler(cluster, faults=NO_FAULTS)
    ev = sched.pick(enabled)  # progress, else (nothing progresses) the environment
    if ev is not None:
        cluster.apply(ev)

``pick``, ``progress`` and ``environment`` only choose; they never apply. ``enabled`` may
be any subset of ``cluster.enabled()`` (e.g. the events of live requests whose time has
come, ``alloc`` offered for the allocator's top page only); with ``NO_FAULTS`` the
scheduler keeps no per-event memory, so a long-lived driver does not grow it.
"""

from __future__ import annotations

import random
from typing import Protocol

from kvproof.refimpl.events import Event
from kvproof.refimpl.faults import FaultPlan
from kvproof.refimpl.handoff import Handoff


class Cluster(Protocol):
    """What the scheduler drives (``refimpl.cluster.Cluster``; typed structurally, so the
    cluster can import the scheduler without a cycle)."""

    handoff: Handoff
    rng: random.Random
    faults: FaultPlan
    fault_log: list[tuple[str, Event]]

    def enabled(self) -> list[Event]: ...
    def apply(self, event: Event) -> None: ...
    def redeliver(self, event: Event) -> None: ...


COMPLETIONS = ("land", "done", "ack")
STATUS_MESSAGES = ("done", "ack")


def run_until_quiet(cluster: Cluster, max_events: int) -> None:
    sched = Scheduler(cluster)
    for _ in range(max_events):
        if not sched.step():
            return


class Scheduler:
    """The engine's seeded scheduling policy (``cluster.rng``) with fault injection.

    ``faults`` defaults to the cluster's plan; pass ``NO_FAULTS`` for the policy alone.
    """

    def __init__(self, cluster: Cluster, *, faults: FaultPlan | None = None) -> None:
        self.c = cluster
        self.rng = cluster.rng
        self.plan = cluster.faults if faults is None else faults
        self.schedule = list(self.plan.schedule)
        # Status messages already drawn lost or delivered (only when the plan loses any).
        self.lost: dict[Event, bool] = {}

    def pick(self, enabled: list[Event]) -> Event | None:
        """The policy's next event among ``enabled``: a progress event, else (nothing can
        progress: a lost message, a full pool) an environment one; ``None`` if neither.
        No fault is injected and nothing is applied."""
        return self.progress(enabled) or self.environment(enabled)

    def _note(self, kind: str, ev: Event) -> None:
        self.c.fault_log.append((kind, ev))

    def step(self) -> bool:
        enabled = self.c.enabled()
        if not enabled:
            return False
        if self.schedule and self.schedule[0] in enabled:
            planned = self.schedule.pop(0)
            self._note("scheduled", planned)
            self.c.apply(planned)
            return True
        ev = self._fault(enabled) or self.progress(enabled) or self.environment(enabled)
        if ev is None:
            return False
        self.c.apply(ev)
        if ev.name in STATUS_MESSAGES and self.rng.random() < self.plan.duplicate_status:
            self.c.redeliver(ev)
        return True

    def _fault(self, enabled: list[Event]) -> Event | None:
        h = self.c.handoff
        plan = self.plan
        kinds = (  # the plan's kind, its probability, the event it injects
            ("fail", plan.fail, "fail"),
            ("disconnect", plan.disconnect, "abort"),
            ("prefill_abort", plan.prefill_abort, "p_abort"),
            ("timeout", plan.timeout, "timeout"),
            ("lease_expire", plan.lease_expire, "expire"),
        )
        for kind, prob, event in kinds:
            if prob and self.rng.random() < prob:
                cands = [e for e in enabled if e.name == event]
                if kind == "disconnect":
                    cands = [e for e in cands if h.flights[e.rid].req.poll != "failed"]
                if kind == "lease_expire":  # only while the blocks are still to be read
                    cands = [e for e in cands if h.flights[e.rid].d.phase in ("queued", "transfer")]
                if cands:
                    ev = self.rng.choice(cands)
                    self._note(kind, ev)
                    return ev
        return None

    def progress(self, enabled: list[Event]) -> Event | None:
        """The policy's choice among the events that move requests forward (the plan's
        lost/delayed/reordered completions applied), or ``None``."""
        h = self.c.handoff
        cands: list[Event] = []
        allocs = self._alloc_choice(enabled)
        cands += allocs
        lands = [e for e in enabled if e.name == "land"]
        if lands:
            oldest = h.transfer.oldest()
            first = Event("land", oldest.rid, oldest.page) if oldest else lands[0]
            if self.plan.reorder and self.rng.random() < self.plan.reorder:
                pick = self.rng.choice(lands)
                if pick != first:
                    self._note("reorder", pick)
                first = pick
            cands.append(first)
        for e in enabled:
            r = e.rid
            if e.name in ("arrive", "send", "post", "commit", "abort_seen", "share"):
                cands.append(e)
            elif e.name in STATUS_MESSAGES:
                if not self.plan.lost_status:
                    cands.append(e)  # nothing is ever lost: nothing to remember
                    continue
                if e not in self.lost:
                    self.lost[e] = self.rng.random() < self.plan.lost_status
                    if self.lost[e]:
                        self._note("lost", e)
                if not self.lost[e]:
                    cands.append(e)
            elif e.name == "step":
                f = h.flights[r]
                if len(f.d.tokens) < f.req.max_new_tokens:
                    cands.append(e)
            elif e.name == "finish":
                f = h.flights[r]
                if len(f.d.tokens) >= f.req.max_new_tokens:
                    cands.append(e)
            elif e.name == "abort" and h.flights[r].req.poll == "failed":
                cands.append(e)  # decode sees Failed and aborts
        if not cands:
            return None
        if self.plan.delay and self.rng.random() < self.plan.delay:
            held = [e for e in cands if e.name in COMPLETIONS]
            rest = [e for e in cands if e.name not in COMPLETIONS]
            if held and rest:
                self._note("delay", held[0])
                cands = rest
        return self.rng.choice(cands)

    def _alloc_choice(self, enabled: list[Event]) -> list[Event]:
        h = self.c.handoff
        top = h.decode.alloc.peek()
        if top is None:
            return []
        queued = sorted({e.rid for e in enabled if e.name == "alloc"})
        partial = [r for r in queued if h.flights[r].d.table]
        if partial:
            return [Event("alloc", partial[0], top)]
        free = h.decode.alloc.free_count
        return [Event("alloc", r, top) for r in queued if h.flights[r].d.reserve <= free]

    def environment(self, enabled: list[Event]) -> Event | None:
        """Nothing can progress: a lost message or a full pool. The environment moves."""
        h = self.c.handoff
        timeouts = [e for e in enabled if e.name == "timeout"]
        gives_up = [
            e
            for e in enabled
            if e.name == "abort" and h.flights[e.rid].d.phase in ("queued", "transfer")
        ]
        for kind, cands in (("timeout", timeouts), ("gives_up", gives_up)):
            if cands:
                ev = cands[0]
                self._note(kind, ev)
                return ev
        return None
