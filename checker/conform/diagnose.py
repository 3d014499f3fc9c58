"""The exact diagnosis of a divergent walk: re-run the same walk (the same moves, a fresh
harness of the same code) under the model with one switch changed, for every switch and
every other value it can take, and name each (switch, value) under which the whole walk
conforms. A value whose protocol cannot be built (an assumption it breaks) is skipped.
Where no single flip explains it, the diagnosis says so and shows the first differing
projection. ``wording.py`` puts it in an engine developer's words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from kvproof.checker.conform import model_side
from kvproof.checker.conform.engine import Engine
from kvproof.checker.conform.projection import Projection
from kvproof.checker.conform.result import Diagnosis
from kvproof.checker.conform.walk import Script, WalkResult, walk
from kvproof.checker.conform.wording import headline
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import CHOICES, Switches, Variant

Rigid = dict[str, dict[tuple[int, ...], Any]]
# When several flips explain a trace, the switches decode's and prefill's driven code decides
# come first, so the one named reads as the code's choice (a flip elsewhere can also fit,
# e.g. ``success_overwrites_abort`` changing whether an abort frees at all): all are listed.
DECIDED = (
    "release",
    "failed_means_drained",
    "abort_ack",
    "ack_generation",
    "decode_gives_up",
    "honor_pending_reject",
    "placeholder_prompt",
)


def flips(sw: Switches) -> Iterator[tuple[str, Any]]:
    """Every (switch, other value), in the switches' declaration order."""
    for f in dataclasses.fields(Switches):
        now = getattr(sw, f.name)
        if isinstance(now, bool):
            yield f.name, not now
        else:
            yield from ((f.name, v) for v in CHOICES.get(f.name, ()) if v != now)


def flipped(variant: Variant, sizes: dict[str, int], name: str, value: Any) -> Concrete | None:
    """The model with one switch changed, or None when that protocol cannot be built."""
    sw = dataclasses.replace(variant.switches, **{name: value})
    try:
        protocol = protocol_of(dataclasses.replace(variant, switches=sw))
        return Concrete(Instance(protocol, sizes))
    except (KvproofInputError, ValueError, KeyError):
        return None


def rigid_values(concrete: Concrete, state: State) -> Rigid:
    """The request facts an initial state chose (its rigid variables)."""
    rigid = {v.name for v in concrete.protocol.vars if v.rigid}
    return {k: v for k, v in concrete.as_dict(state).items() if k in rigid}


def replay(engine: Engine, concrete: Concrete, rigid: Rigid, moves: list[Any]) -> WalkResult | None:
    """``moves`` under ``concrete`` on a fresh harness; None when the initial state is
    not one of this model's."""
    try:
        init = concrete.make_state({k: v for k, v in rigid.items() if k in concrete.cells})
    except KeyError:
        return None
    if not concrete.holds(concrete.protocol.init, init):
        return None
    h = engine.harness(model_side.requests_of(concrete, init))
    return walk(concrete, init, h, Script(moves), allowed=lambda a: True, max_steps=len(moves))


def conforms_under(
    engine: Engine, concrete: Concrete | None, rigid: Rigid, moves: list[Any]
) -> bool:
    if concrete is None:
        return False
    again = replay(engine, concrete, rigid, moves)
    return (
        again is not None
        and not again.refused
        and not again.diverged
        and len(again.moves) == len(moves)
    )


def diagnose(engine: Engine, variant: Variant, concrete: Concrete, res: WalkResult) -> Diagnosis:
    first = res.mismatches[0].line() if res.mismatches else None
    if res.raised is not None:
        return Diagnosis(f"{engine.name} {engine.release}'s code raised {res.raised}", (), first)
    sizes = dict(concrete.inst.sizes)
    rigid = rigid_values(concrete, res.init)
    found = [
        (name, str(value).lower() if isinstance(value, bool) else str(value))
        for name, value in flips(variant.switches)
        if conforms_under(engine, flipped(variant, sizes, name, value), rigid, res.moves)
    ]
    if not found and not _code_moved(engine, concrete, rigid, res):
        # A step the code never takes (its projection did not change at the divergent
        # move): flips whose model cannot take it either.
        found = [
            (name, str(value).lower() if isinstance(value, bool) else str(value))
            for name, value in flips(variant.switches)
            if forbids(engine, flipped(variant, sizes, name, value), rigid, res.moves)
        ]
    rank = {name: i for i, name in enumerate(DECIDED)}
    explained = tuple(sorted(found, key=lambda f: rank.get(f[0], len(rank))))
    dropped = () if explained else assumptions_broken(engine, variant, sizes, rigid, res.moves)
    words = headline(engine, variant, concrete, res, explained)
    if dropped:
        words += f"; the walk conforms once the variant stops assuming {', '.join(dropped)}"
    return Diagnosis(words, explained, first, dropped)


def _code_moved(engine: Engine, concrete: Concrete, rigid: Rigid, res: WalkResult) -> bool:
    """Whether the code changed what the first mismatch names at the divergent move (it
    took a step of its own there, e.g. released after one of two ACKs): then "the model
    cannot take this step either" does not describe it."""
    if not res.moves or res.code is None:
        return False
    before = replay(engine, concrete, rigid, res.moves[:-1]) if len(res.moves) > 1 else None
    if before is None or before.code is None:
        return True  # the first move: nothing to compare with
    m = res.mismatches[0] if res.mismatches else None
    if m is None:
        return before.code != res.code
    return _field(before.code, m.request, m.what) != _field(res.code, m.request, m.what)


def _field(p: Projection, r: int, what: str) -> Any:
    """The value a mismatch names, in a projection (``-1``: the run's stray writes)."""
    if r < 0 or r >= len(p.requests):
        return p.stray
    return getattr(p.requests[r], what, None)


def forbids(engine: Engine, concrete: Concrete | None, rigid: Rigid, moves: list[Any]) -> bool:
    """Under this model the walk conforms up to its last (divergent) step, and the model
    cannot take that step: it agrees with the code, which never does (vLLM 0.34.0 push:
    an aborted decode's blocks are freed by no prefill ACK; with abort_notifies_prefill =
    false the model has no ACK either). Steps of actions this model does not have are left
    out (an ABORT prefill never receives); the divergent step itself must be one it has."""
    if concrete is None or not moves or not isinstance(moves[-1], ActionInstance):
        return False
    names = {a.name for a in concrete.protocol.actions}
    if moves[-1].action not in names:
        return False
    kept = [m for m in moves if not isinstance(m, ActionInstance) or m.action in names]
    again = replay(engine, concrete, rigid, kept)
    return (
        again is not None and again.refused and not again.diverged and len(again.moves) == len(kept)
    )


def assumptions_broken(
    engine: Engine, variant: Variant, sizes: dict[str, int], rigid: Rigid, moves: list[Any]
) -> tuple[str, ...]:
    """The variant's assumptions without which the walk conforms: the environment the
    code meets is not the one the variant assumes (vLLM's lease expiring before decode's
    reads contradicts ``lease_outlives_read``)."""
    out = []
    for name in variant.assume:
        try:
            model = Concrete(Instance(protocol_of(variant, without=(name,)), sizes))
        except (KvproofInputError, ValueError, KeyError):
            continue
        if conforms_under(engine, model, rigid, moves):
            out.append(name)
    return tuple(out)
