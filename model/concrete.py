"""Concrete interpretation: states are tuples of Python values; actions run on them.

Used to replay every solver counterexample (a trace that does not replay is a kvproof bug,
not a result), for explicit-state exploration, and for conformance replay.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.model.context import Ctx
from kvproof.model.dsl import Invariant
from kvproof.model.instance import ActionInstance, Instance
from kvproof.model.logic import PyLogic


@dataclass(frozen=True)
class State:
    """One value tuple per protocol variable (flattened over its argument sorts)."""

    data: tuple[tuple[Any, ...], ...]


class _View:
    def __init__(self, inst: Instance, state: State) -> None:
        self.inst = inst
        self.state = state

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        i = self.inst.var_index[var]
        return self.state.data[i][self.inst.flat(var, args)]


class Concrete:
    """The concrete interpreter of a protocol instance."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.protocol = inst.protocol
        self.logic = PyLogic(inst.sizes)
        self._cells = {v.name: inst.cells(v) for v in self.protocol.vars}

    # -- states --------------------------------------------------------------------------
    def make_state(self, values: dict[str, dict[tuple[int, ...], Any]] | None = None) -> State:
        """A state from defaults, overridden by ``values[var][args]``."""
        values = values or {}
        data = []
        for v in self.protocol.vars:
            row = [v.default] * len(self._cells[v.name])
            for args, val in values.get(v.name, {}).items():
                row[self.inst.flat(v.name, args)] = val
            data.append(tuple(row))
        return State(tuple(data))

    def initial_states(self) -> Iterator[State]:
        """Every initial state: rigid and free-init variables range over their values."""
        free = [v for v in self.protocol.vars if v.rigid or v.name in self.protocol.free_init]
        choices = []
        for v in free:
            domain = [False, True] if v.kind == "bool" else list(v.kind.values)  # type: ignore[union-attr]
            choices.append(
                [dict(zip(self._cells[v.name], vals, strict=True))
                 for vals in itertools.product(domain, repeat=len(self._cells[v.name]))]
            )
        for combo in itertools.product(*choices):
            state = self.make_state({v.name: c for v, c in zip(free, combo, strict=True)})
            if self.holds(self.protocol.init, state):
                yield state

    def value(self, state: State, var: str, args: tuple[int, ...] = ()) -> Any:
        return state.data[self.inst.var_index[var]][self.inst.flat(var, args)]

    def as_dict(self, state: State) -> dict[str, dict[tuple[int, ...], Any]]:
        return {
            v.name: dict(zip(self._cells[v.name], state.data[i], strict=True))
            for i, v in enumerate(self.protocol.vars)
        }

    # -- evaluation ----------------------------------------------------------------------
    def ctx(self, state: State) -> Ctx:
        return Ctx(self.logic, _View(self.inst, state), self.protocol.switches)

    def holds(self, fn: Any, state: State) -> bool:
        return bool(fn(self.ctx(state)))

    def check(self, inv: Invariant, state: State) -> bool:
        return bool(inv.body(self.ctx(state)))

    def violated(self, state: State) -> list[str]:
        return [i.name for i in self.protocol.safety if not self.check(i, state)]

    def step(self, state: State, inst: ActionInstance) -> State | None:
        """The successor of ``state`` by ``inst``, or None when its guard is false."""
        ctx = self.ctx(state)
        self.protocol.action(inst.action).body(ctx, *inst.args)
        if not all(ctx.guards):
            return None
        data = list(state.data)
        for var, ops in ctx.ops.items():
            i = self.inst.var_index[var]
            row = list(data[i])
            for kind, a, b in ops:
                if kind == "point":
                    row[self.inst.flat(var, a)] = b
                else:
                    row = [a(*args, old) for args, old in zip(self._cells[var], row, strict=True)]
            data[i] = tuple(row)
        return State(tuple(data))

    def successors(self, state: State) -> Iterator[tuple[ActionInstance, State]]:
        for inst in self.inst.all_instances:
            nxt = self.step(state, inst)
            if nxt is not None:
                yield inst, nxt

    def enabled(self, state: State, inst: ActionInstance) -> bool:
        return self.step(state, inst) is not None

    def diff(self, before: State, after: State) -> list[tuple[str, tuple[int, ...], Any, Any]]:
        """(var, args, old, new) for every cell that changed."""
        out = []
        for i, v in enumerate(self.protocol.vars):
            old_row, new_row = before.data[i], after.data[i]
            if old_row == new_row:
                continue
            for args, o, n in zip(self._cells[v.name], old_row, new_row, strict=True):
                if o != n:
                    out.append((v.name, args, o, n))
        return out
