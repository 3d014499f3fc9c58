"""One event list (spec/events.py) held to the protocol, the engine's log and the spec table."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from kvproof.model.handoff import protocol_of
from kvproof.model.lang.dsl import Action, ActionKind, Protocol
from kvproof.refimpl.events import Event
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.events import BY_NAME, EVENT_NAMES, EVENTS
from kvproof.spec.variant import list_variants

SPEC_MD = Path(__file__).resolve().parents[2] / "spec" / "handoff.md"


def _table() -> list[tuple[str, str, tuple[str, ...], str]]:
    """(number, name, params, who) of each row of spec/handoff.md's event table."""
    rows = re.findall(r"^\| (E\d+) \| `(\w+)\(([^)]*)\)` \| ([^|]+) \|", SPEC_MD.read_text(), re.M)
    params = {"r": "Req", "p": "Page"}
    return [
        (n, name, tuple(params[a.strip()] for a in args.split(",")), who.strip())
        for n, name, args, who in rows
    ]


def test_spec_table_lists_the_events_in_order() -> None:
    table = _table()
    assert [n for n, *_ in table] == [f"E{i}" for i in range(1, len(EVENTS) + 1)]
    assert [(name, ps, who) for _, name, ps, who in table] == [
        (e.name, e.params, e.who) for e in EVENTS
    ]


def test_engine_log_takes_exactly_the_events() -> None:
    for e in EVENTS:
        Event(e.name, 0, 1 if "Page" in e.params else None)
        with pytest.raises(ValueError):
            Event(e.name, 0, None if "Page" in e.params else 1)
    with pytest.raises(ValueError, match="unknown event"):
        Event("reboot", 0)


def test_every_variants_protocol_has_the_events_kinds_and_params() -> None:
    seen: set[str] = set()
    for variant, liveness in itertools.product(list_variants(), (False, True)):
        # liveness checks add the peer's death (crash), which safety leaves out
        protocol = protocol_of(variant, liveness=liveness)
        for a in protocol.actions:
            spec = BY_NAME[a.name]
            assert (a.params, a.kind) == (spec.params, ActionKind(spec.kind)), a.name
            seen.add(a.name)
        assert protocol.faults | protocol.engine_steps == {a.name for a in protocol.actions}
    # Every event is some variant's action (else the list names an event nobody takes).
    assert seen == set(EVENT_NAMES)


def test_an_action_without_a_kind_is_fine_for_safety_but_not_for_the_split() -> None:
    base = protocol_of(list_variants()[0])
    bare = Action("tick", ("Req",), lambda s, r: None)
    old = Protocol(
        name="old",
        sorts=base.sorts,
        vars=base.vars,
        actions=(*base.actions, bare),
        invariants=base.invariants,
        init=base.init,
    )
    assert old.action("tick").kind is None and old.safety
    for split in ("faults", "engine_steps"):
        with pytest.raises(KvproofInputError, match=r"protocol 'old'.*'tick' declares no kind"):
            getattr(old, split)
