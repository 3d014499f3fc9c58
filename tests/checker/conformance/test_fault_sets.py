"""Every walker's fault set is the protocol's (``Protocol.faults``, from spec/events.py).

The engine walks (``walk.py``), the drain after a finding (``replay.py``), the model-first
search (``model_first.py``) and conform's walks of the release code (``conform/run.py``)
each leave faults out or inject them; each is driven here over every action its variant's
protocol has, and what it treats as a fault must be exactly the protocol's faults
(``model_first`` once missed ``give_up``; conform kept a hand-written list). And no walker
keeps a list of fault names of its own: the AST test below finds one anywhere in checker/."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from kvproof.checker.conform import run as conform_run
from kvproof.checker.conformance import model_first, replay, walk
from kvproof.checker.conformance.mapping import RidMap
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.instance import ActionInstance
from kvproof.refimpl.events import Event
from kvproof.spec.events import FAULTS
from kvproof.spec.variant import list_variants

VARIANTS = list_variants()


def _fake_lockstep(protocol, poll: str = "none"):  # type: ignore[no-untyped-def]
    """What the walkers read of a Lockstep, with every action of ``protocol`` enabled (one
    instance each, request 0, page 0), no write in flight, no token decoded yet."""
    events = [Event(a.name, 0, 0 if "Page" in a.params else None) for a in protocol.actions]
    rids = RidMap(0)
    cluster = SimpleNamespace(
        enabled=lambda alloc=None: events,
        status=lambda rid: SimpleNamespace(poll=poll, generated=0),
        in_flight=lambda rid=None: (),
    )
    return SimpleNamespace(
        protocol=protocol,
        cluster=cluster,
        rids=rids,
        excluded=lambda inst: False,
        engine_enabled=lambda: [rids.action(e) for e in events],
        max_new_tokens=4,
    )


def _names(insts: list[ActionInstance]) -> set[str]:
    return {i.action for i in insts}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_walkers_fault_sets_are_the_protocols(variant) -> None:  # type: ignore[no-untyped-def]
    protocol = protocol_of(variant)
    every = {a.name for a in protocol.actions}
    ls = _fake_lockstep(protocol)
    assert protocol.faults  # every variant has some environment
    # walk.py: without faults it offers exactly the engine steps; with them, everything.
    assert _names(walk._candidates(ls, faults=False)) == every - protocol.faults
    assert _names(walk._candidates(ls, faults=True)) == every
    assert {a for a in every if walk._is_fault(ls, ActionInstance(a, (0, 0)))} == protocol.faults
    # the drain: no new fault ("finish" waits for max_new_tokens, so "step" stands for both).
    assert _names(replay.candidates(ls)) == every - protocol.faults - {"finish"}
    # model_first.py: model walks leave out the same set.
    assert model_first.left_out(protocol, faults=False) == protocol.faults
    assert model_first.left_out(protocol, faults=True) == frozenset()
    # conform's walks (checker/conform/run.py): the same, less the client abort every
    # conform walk takes.
    off, on = conform_run.allowed_actions(False), conform_run.allowed_actions(True)
    assert {a for a in every if not off(a)} == protocol.faults - {"abort"}
    assert {a for a in every if not on(a)} == frozenset()


def test_state_dependent_rules_are_stated_next_to_the_list() -> None:
    # An out-of-order landing is a reordering network's fault; decode's abort after a
    # Failed poll is its own reaction, no new fault (the only two exceptions).
    assert set(walk.STATE_FAULTS) == {"land"} and set(replay.REACTIONS) == {"abort"}
    variant = next(v for v in VARIANTS if "abort" in protocol_of(v).faults)
    ls = _fake_lockstep(protocol_of(variant), poll="failed")
    assert "abort" in _names(replay.candidates(ls))


CHECKER = Path(__file__).resolve().parents[3] / "checker"


def fault_lists(path: Path) -> list[int]:
    """Lines of a literal set, tuple or list of two or more of the spec's faults and nothing
    else: a walker's own copy of what ``Protocol.faults`` says. (A dispatch over event names,
    engine steps and faults alike, is no fault set.)"""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Set | ast.Tuple | ast.List)
        and len(n.elts) >= 2
        and all(isinstance(e, ast.Constant) and e.value in FAULTS for e in n.elts)
    ]


@pytest.mark.parametrize(
    "path", sorted(CHECKER.rglob("*.py")), ids=lambda p: str(p.relative_to(CHECKER))
)
def test_no_walker_keeps_its_own_fault_list(path: Path) -> None:
    assert fault_lists(path) == [], f"{path.relative_to(CHECKER)}: use Protocol.faults"


def test_the_scan_sees_a_hand_kept_list(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'ENV = frozenset({"fail", "p_abort", "timeout"})\n'
        'if act in ("send", "fail", "abort"):\n'  # a dispatch over events: not a fault set
        "    pass\n"
    )
    assert fault_lists(bad) == [1]
