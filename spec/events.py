"""The handoff's events, once: name, parameters, kind, who takes it, and why that kind.

The protocol (``model/handoff/``) takes each action's kind from here, the engine's log
(``refimpl/events.py``) its vocabulary, and ``spec/handoff.md``'s event table lists the
same names in the same order; ``tests/spec/test_events.py`` holds all three to this list.

``kind`` is ``"engine"`` (a step of the system: router, prefill, decode, the transfer
engine delivering a posted write) or ``"fault"`` (the environment: a client, the network,
a clock, a peer's death). Walkers inject faults on purpose and leave them out otherwise;
liveness may assume engine steps fair, and a fault only through a named assumption (a
clock that advances makes ``timeout`` eventually fire), which is why timers are faults.
"""

from __future__ import annotations

from dataclasses import dataclass

ENGINE = "engine"
FAULT = "fault"


@dataclass(frozen=True)
class EventSpec:
    name: str
    params: tuple[str, ...]
    kind: str  # ENGINE or FAULT
    who: str  # as in spec/handoff.md's table
    why: str  # why this kind


_R, _RP = ("Req",), ("Req", "Page")

# E1..E21 of spec/handoff.md, in table order.
EVENTS: tuple[EventSpec, ...] = (
    EventSpec("arrive", _R, ENGINE, "router, P, D", "dispatch and admission: the input, no fault"),
    EventSpec("alloc", _RP, ENGINE, "D", "decode's allocator"),
    EventSpec("send", _R, ENGINE, "D -> P", "decode's prealloc handshake"),
    EventSpec("post", _RP, ENGINE, "P (push) / D (pull)", "the sender's step"),
    # Out of order it is a fault (a reordering network): walk.py's state-dependent rule.
    EventSpec("land", _RP, ENGINE, "transfer engine", "a posted write completes"),
    EventSpec("p_abort", _R, FAULT, "P", "a client's abort or a timeout reaches prefill"),
    EventSpec("done", _R, ENGINE, "P (push) / D (pull)", "the sender reports its status"),
    EventSpec("fail", _R, FAULT, "transfer engine", "the network fails (Mooncake FAILED)"),
    EventSpec("commit", _R, ENGINE, "D", "decode's first step"),
    EventSpec("step", _R, ENGINE, "D", "decode's later steps"),
    EventSpec("finish", _R, ENGINE, "D", "generation ends"),
    # Decode's own answer to a Failed poll is no new fault: a state-dependent rule of
    # conformance replay's drain.
    EventSpec("abort", _R, FAULT, "D", "a client disconnects (or decode aborts)"),
    EventSpec("abort_seen", _R, ENGINE, "P", "prefill processes the ABORT"),
    EventSpec("ack", _R, ENGINE, "P -> D", "prefill's drain ACK"),
    EventSpec("timeout", _R, FAULT, "D", "a clock: SGLang's 30 s deferred-release timeout"),
    EventSpec("expire", _R, FAULT, "P", "a clock: a lease (vLLM) or an early free (dynamo)"),
    EventSpec("give_up", _R, FAULT, "D", "a clock (300 s wait) or a peer declared dead"),
    EventSpec("insert", _RP, ENGINE, "D", "decode's radix cache"),
    EventSpec("share", _RP, ENGINE, "D", "decode's radix cache"),
    # Liveness only (issue #29): a dead peer writes nothing more, so it adds no safety run.
    EventSpec("crash", _R, FAULT, "P", "a peer dies mid-transfer and never reports"),
    # A room reused while an earlier abort's ACK is still on the wire, or a duplicate.
    EventSpec("stale_ack", _R, FAULT, "P -> D", "the network delivers a late ABORT_ACK"),
)
BY_NAME: dict[str, EventSpec] = {e.name: e for e in EVENTS}
EVENT_NAMES: tuple[str, ...] = tuple(e.name for e in EVENTS)
PAGE_EVENTS: frozenset[str] = frozenset(e.name for e in EVENTS if "Page" in e.params)
FAULTS: frozenset[str] = frozenset(e.name for e in EVENTS if e.kind == FAULT)
