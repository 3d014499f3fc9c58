"""Liveness properties and fairness, next to the safety invariants (issue #29).

A ``Liveness`` property means *always (trigger(x) -> eventually goal(x))* for every tuple
``x`` of its parameter sorts. It is its own kind, not ``Invariant(safety=False)`` (which
means a proof-only strengthening conjunct). A counterexample is a lasso: a stem to a state
where ``trigger`` holds, then a loop repeated forever in which ``goal`` never holds.

A lasso counts only if it is *fair*: the engine does not stop taking its own steps. Each
``Fair`` entry is one weak-fairness obligation on an action (optionally restricted to the
states where ``when`` holds): an instance enabled (and ``when``) throughout the loop must
be taken in it. ``fairness(protocol)`` gives every ENGINE action weak fairness; a FAULT
action gets it only from the protocol's ``fair`` list, which a fairness assumption
(``spec/assumptions.py``, kind ``fairness``) or the protocol's own engine rules fill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvproof.spec.errors import KvproofInputError

if TYPE_CHECKING:
    from kvproof.model.lang.dsl import Protocol


@dataclass(frozen=True)
class Liveness:
    """*always (trigger(x) -> eventually goal(x))*, for every ``x`` over ``params``."""

    name: str
    params: tuple[str, ...]  # sort of each argument of trigger and goal
    trigger: Callable[..., Any]  # (s, *x) -> condition
    goal: Callable[..., Any]  # (s, *x) -> condition
    doc: str = ""


@dataclass(frozen=True)
class Fair:
    """Weak fairness on ``action`` (in the states where ``when`` holds, when given).

    ``why`` says where the obligation comes from: "engine" for the engine's own steps, an
    assumption's name, or a sentence for a state-dependent engine rule."""

    action: str
    why: str
    when: Callable[..., Any] | None = None  # (s, *action args) -> condition


def fairness(protocol: Protocol) -> tuple[Fair, ...]:
    """Every weak-fairness obligation of ``protocol``: each ENGINE action, then the
    protocol's own ``fair`` list (faults made fair by assumptions, state-dependent engine
    rules). Needs every action's kind (``Protocol.engine_steps`` says which lacks one)."""
    engine = protocol.engine_steps
    out = [Fair(a.name, "engine") for a in protocol.actions if a.name in engine]
    names = {a.name for a in protocol.actions}
    for f in protocol.fair:
        if f.action not in names:
            raise KvproofInputError(
                f"fairness on {f.action!r} ({f.why}): the protocol has no such action",
                where=f"protocol {protocol.name!r}",
            )
        out.append(f)
    return tuple(out)


def check_liveness_names(protocol: Protocol) -> None:
    """Each property's parameters are sorts of the protocol (else bad input, one line)."""
    for prop in protocol.liveness:
        for sort in prop.params:
            if sort not in protocol.sorts:
                raise KvproofInputError(
                    f"liveness property {prop.name!r} is over sort {sort!r}, which the"
                    f" protocol does not have (sorts: {', '.join(protocol.sorts)})",
                    where=f"protocol {protocol.name!r}",
                )
