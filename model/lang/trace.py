"""Traces: an initial assignment plus a sequence of action instances.

A trace carries no states of its own: states are always re-derived by running the concrete
interpreter, so a trace that does not replay is detected at once (``replay`` raises).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance


class ReplayError(RuntimeError):
    """A trace is not a run of the protocol: an internal error when it came from a solver."""


@dataclass(frozen=True)
class Trace:
    variant: str
    sizes: dict[str, int]
    # Initial values of the rigid variables: var -> {args: value}.
    init: dict[str, dict[tuple[int, ...], Any]]
    steps: tuple[ActionInstance, ...]
    violated: str | None = None  # the invariant (or liveness property) the trace violates
    meta: dict[str, Any] = field(default_factory=dict)
    # A lasso (a liveness counterexample): ``steps[loop:]`` is the loop, which returns to the
    # state reached after ``steps[:loop]`` and repeats forever; empty (``loop == len(steps)``):
    # a stutter, the last state forever with no fair step enabled. None: a safety trace.
    loop: int | None = None

    def __len__(self) -> int:
        return len(self.steps)


def replay(trace: Trace, concrete: Concrete) -> list[State]:
    """Every state of ``trace`` (initial first); ReplayError if a step is not enabled."""
    state = concrete.make_state(trace.init)
    if not concrete.holds(concrete.protocol.init, state):
        raise ReplayError("the initial state violates the protocol's init constraint")
    states = [state]
    for i, inst in enumerate(trace.steps, start=1):
        nxt = concrete.step(state, inst)
        if nxt is None:
            raise ReplayError(f"step {i}: {inst} is not enabled")
        states.append(nxt)
        state = nxt
    return states


def initial_assignment(concrete: Concrete, state: State) -> dict[str, dict[tuple[int, ...], Any]]:
    """The rigid part of a state, as a trace's ``init``."""
    proto = concrete.protocol
    values = concrete.as_dict(state)
    return {v.name: values[v.name] for v in proto.vars if v.rigid}
