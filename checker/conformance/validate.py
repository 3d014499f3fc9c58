"""Trace validation: is an engine's event log a run of the model?

The log is JSON Lines: a header ``{"kvproof_log": 1, "variant": ..., "pages": M}`` and one
event per line, ``{"event": "alloc", "rid": 0, "page": 3}``, in the vocabulary of
``spec/handoff.md`` (``refimpl`` writes it with ``write_event_log``; any engine that writes
the same events can be checked). An ``arrive`` may carry the engine's admission verdicts
``over_p``/``over_d``; when it does not, both are left open and the check keeps every model
state consistent with the log so far (trace validation with nondeterminism, as in
Cirstea et al.). The first event that no candidate state enables is reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from kvproof.checker.traces.tracefile import read_json_lines
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.refimpl.events import EVENT_NAMES, PAGE_EVENTS
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.files import write_text_atomic
from kvproof.spec.variant import Variant

if TYPE_CHECKING:
    from kvproof.refimpl.cluster import Cluster

LOG_VERSION = 1


@dataclass(frozen=True)
class LogEvent:
    line: int
    action: ActionInstance
    over_p: bool | None = None
    over_d: bool | None = None


@dataclass(frozen=True)
class EventLog:
    variant: str | None
    requests: int
    pages: int
    events: tuple[LogEvent, ...]


@dataclass
class ValidationReport:
    variant: str
    events: int
    checked: int = 0
    first_bad: LogEvent | None = None
    context: list[str] = field(default_factory=list)  # the model's view where it stopped
    violations: list[tuple[int, str]] = field(default_factory=list)  # (line, invariant)
    candidates: int = 1

    @property
    def ok(self) -> bool:
        return self.first_bad is None

    @property
    def exit_code(self) -> int:
        return 0 if self.ok and not self.violations else 1


def write_event_log(cluster: Cluster, path: Path) -> None:
    """Write a ``Cluster``'s event log (with its admission verdicts on ``arrive``)."""
    header = {
        "kvproof_log": LOG_VERSION,
        "variant": cluster.variant.name,
        "pages": cluster.counts().decode_pages,
        "requests": len(cluster.requests),
        "events": len(cluster.events),  # a log cut at a line boundary is caught
    }
    lines = [json.dumps(header)]
    for ev in cluster.events:
        row: dict[str, Any] = {"event": ev.name, "rid": ev.rid}
        if ev.page is not None:
            row["page"] = ev.page
        if ev.name == "arrive":
            req = cluster.requests[ev.rid]
            row["over_p"], row["over_d"] = req.over_p, req.over_d
        lines.append(json.dumps(row))
    write_text_atomic(path, "\n".join(lines) + "\n")


def read_event_log(path: Path) -> EventLog:
    path = Path(path)
    header: dict[str, Any] | None = None
    events: list[LogEvent] = []
    for n, row in read_json_lines(path, "log"):
        where = f"{path}:{n}"
        if not isinstance(row, dict):
            raise KvproofInputError("each line must be an object", where)
        if header is None:
            if row.get("kvproof_log") != LOG_VERSION:
                raise KvproofInputError('first line must be the header {"kvproof_log": 1}', where)
            header = row
            continue
        events.append(_event(row, where, n))
    if header is None:
        raise KvproofInputError("empty log", str(path))
    count = header.get("events")
    if count is not None:
        if not _nat(count):
            raise KvproofInputError("'events' must be a non-negative integer", f"{path}:1")
        if count != len(events):
            raise KvproofInputError(
                f"the header says {count} events, the log has {len(events)}"
                + (" (truncated?)" if len(events) < count else ""),
                str(path),
            )
    requests = max([e.action.args[0] + 1 for e in events] + [int(header.get("requests") or 0)])
    pages = header.get("pages")
    if pages is None:
        pages = max([e.action.args[1] + 1 for e in events if len(e.action.args) > 1] + [1])
    if not _nat(pages) or pages < 1:
        raise KvproofInputError("'pages' must be a positive integer", f"{path}:1")
    for e in events:
        if len(e.action.args) > 1 and e.action.args[1] >= pages:
            raise KvproofInputError(f"page {e.action.args[1]} >= pages {pages}", f"{path}:{e.line}")
    return EventLog(header.get("variant"), max(requests, 1), pages, tuple(events))


def _event(row: dict[str, Any], where: str, n: int) -> LogEvent:
    for key in row:
        if key not in ("event", "rid", "page", "over_p", "over_d"):
            raise KvproofInputError(f"unknown key '{key}'", where)
    name, rid, page = row.get("event"), row.get("rid"), row.get("page")
    if not isinstance(name, str) or not name:
        raise KvproofInputError("'event' must be an event name", where)
    if name not in EVENT_NAMES:
        # Outside the vocabulary of spec/handoff.md: bad input, as ``replay`` says of an
        # unknown action. A known event the variant cannot take is "not enabled" (exit 1).
        raise KvproofInputError(f"unknown event {name!r} (known: {', '.join(EVENT_NAMES)})", where)
    if not _nat(rid):
        raise KvproofInputError("'rid' must be a non-negative integer", where)
    if (name in PAGE_EVENTS) != (page is not None):
        need = "needs" if name in PAGE_EVENTS else "takes no"
        raise KvproofInputError(f"event {name!r} {need} 'page'", where)
    if page is not None and not _nat(page):
        raise KvproofInputError("'page' must be a non-negative integer", where)
    args: tuple[int, ...] = (rid,) if page is None else (rid, page)
    for key in ("over_p", "over_d"):
        if key in row and (name != "arrive" or not isinstance(row[key], bool)):
            raise KvproofInputError(f"'{key}' is a boolean of an arrive event", where)
    return LogEvent(n, ActionInstance(name, args), row.get("over_p"), row.get("over_d"))


def _nat(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def validate_log(log: EventLog, variant: Variant) -> ValidationReport:
    """Check every event of ``log`` against the model of ``variant``."""
    protocol = protocol_of(variant, assumed=False)
    concrete = Concrete(Instance(protocol, {"Req": log.requests, "Page": log.pages}))
    actions = {a.name for a in protocol.actions}
    states: list[State] = [concrete.make_state()]
    report = ValidationReport(variant.name, len(log.events))
    for ev in log.events:
        inst = ev.action
        known = inst.action in actions
        cands = (c for st in states for c in _choices(concrete, st, ev)) if known else ()
        nxt = dict.fromkeys(out for c in cands if (out := concrete.step(c, inst)) is not None)
        if not nxt:
            report.first_bad = ev
            report.context = _context(concrete, states[0], inst, known)
            report.candidates = len(states)
            return report
        states = list(nxt)
        report.checked += 1
        # A violation counts when every state consistent with the log violates it.
        bad = set.intersection(*(set(concrete.violated(s)) for s in states))
        seen = {name for _, name in report.violations}
        report.violations += [(ev.line, name) for name in sorted(bad - seen)]
    report.candidates = len(states)
    return report


def _choices(concrete: Concrete, state: State, ev: LogEvent) -> list[State]:
    """The state with the arriving request's admission verdicts set (open ones: both)."""
    if ev.action.action != "arrive":
        return [state]
    r = ev.action.args[0]
    out = []
    for op, od in product(*((False, True) if x is None else (x,) for x in (ev.over_p, ev.over_d))):
        values = concrete.as_dict(state)
        values["over_p"][(r,)], values["over_d"][(r,)] = op, od
        out.append(concrete.make_state(values))
    return out


def _context(concrete: Concrete, state: State, inst: ActionInstance, known: bool) -> list[str]:
    if not known:
        return [f"{inst.action!r} is not an action of this variant"]
    r = inst.args[0]
    names = ("dphase", "pphase", "poll", "resp")
    out = [", ".join(f"{n}(r{r}) = {concrete.value(state, n, (r,))}" for n in names)]
    if len(inst.args) > 1:
        p = inst.args[1]
        owners = [
            x for x in range(concrete.inst.sizes["Req"]) if concrete.value(state, "owns", (x, p))
        ]
        out.append(f"page p{p} owned by {', '.join(f'r{x}' for x in owners) or 'nobody'}")
    return out
