"""Concrete interpretation: states are tuples of Python values; actions run on them.

Used to replay every solver counterexample (a trace that does not replay is a kvproof bug,
not a result), for explicit-state exploration, and for conformance replay.

Two interpreters with the same semantics. The *reference* one runs an action body on a
``Ctx`` over the state, as written. The *compiled* one (the default for ``step``,
``successors`` and ``check``) runs each action instance's body once, over symbolic cells,
and turns the result into straight-line Python: the DSL forbids Python branches on state,
so one symbolic run sees every path, and the generated code reads each cell as a local,
checks guards before computing any update, and skips instances whose guard is statically
false (a switch turned the action off). A body that does branch on state (``bool()`` of a
symbolic cell) is not compilable: that instance falls back to the reference interpreter.
``tests/model/search/test_explore.py`` checks both interpreters agree on every reachable state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.model.lang.compiled import Compiler, Data
from kvproof.model.lang.context import Ctx, apply_row
from kvproof.model.lang.dsl import Enum, Invariant
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.logic import PyLogic


@dataclass(frozen=True)
class State:
    """One value tuple per protocol variable (flattened over its argument sorts)."""

    data: tuple[tuple[Any, ...], ...]


class _View:
    def __init__(self, where: dict[str, tuple[int, tuple[int, ...]]], data: Data) -> None:
        self.where = where
        self.data = data

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        i, strides = self.where[var]
        flat = 0
        for a, s in zip(args, strides, strict=True):
            flat += a * s
        return self.data[i][flat]


class Concrete:
    """The concrete interpreter of a protocol instance."""

    def __init__(self, inst: Instance, *, compiled: bool = True) -> None:
        self.inst = inst
        self.protocol = inst.protocol
        self.logic = PyLogic(inst.sizes)
        # var -> its argument tuples in flattening order (the compiler's layout too)
        self.cells = {v.name: inst.cells(v) for v in self.protocol.vars}
        # var -> {args: flat index}: cells are listed in flattening order, so a cell's
        # index is its place in the list (a dict lookup, where ``Instance.flat`` sums
        # strides: make_state runs once per conformance step, issue 30).
        self._flat = {name: {a: i for i, a in enumerate(cs)} for name, cs in self.cells.items()}
        self._where = {v.name: (i, inst.strides(v.name)) for i, v in enumerate(self.protocol.vars)}
        self._bodies = {a.name: a.body for a in self.protocol.actions}
        self._compiled = compiled
        self._compiler: Compiler | None = None
        self._step_fns: dict[ActionInstance, Callable[[Any], Any]] = {}
        self._check_fns: dict[Invariant, Callable[[Any], bool]] = {}
        self._succ_fn: Callable[[Any], list[tuple[ActionInstance, Any]]] | None = None
        self._violated_fn: Callable[[Any], list[str]] | None = None

    # -- states --------------------------------------------------------------------------
    def make_state(self, values: dict[str, dict[tuple[int, ...], Any]] | None = None) -> State:
        """A state from defaults, overridden by ``values[var][args]``."""
        values = values or {}
        data = []
        for v in self.protocol.vars:
            index = self._flat[v.name]
            row = [v.default] * len(index)
            for args, val in values.get(v.name, {}).items():
                row[index[args]] = val
            data.append(tuple(row))
        return State(tuple(data))

    def initial_states(self) -> Iterator[State]:
        """Every initial state: rigid variables range over their values (within ``init``)."""
        free = [v for v in self.protocol.vars if v.rigid]
        choices = []
        for v in free:
            domain = list(v.kind.values) if isinstance(v.kind, Enum) else [False, True]
            choices.append(
                [
                    dict(zip(self.cells[v.name], vals, strict=True))
                    for vals in itertools.product(domain, repeat=len(self.cells[v.name]))
                ]
            )
        for combo in itertools.product(*choices):
            state = self.make_state({v.name: c for v, c in zip(free, combo, strict=True)})
            if self.holds(self.protocol.init, state):
                yield state

    def value(self, state: State, var: str, args: tuple[int, ...] = ()) -> Any:
        return state.data[self.inst.var_index[var]][self.inst.flat(var, args)]

    def as_dict(self, state: State) -> dict[str, dict[tuple[int, ...], Any]]:
        return {
            v.name: dict(zip(self.cells[v.name], state.data[i], strict=True))
            for i, v in enumerate(self.protocol.vars)
        }

    # -- evaluation ----------------------------------------------------------------------
    def ctx(self, state: State) -> Ctx:
        return self.ctx_of(state.data)

    def ctx_of(self, data: Data) -> Ctx:
        """A context reading raw ``State.data`` (what the compiler's fallbacks run on)."""
        return Ctx(self.logic, _View(self._where, data))

    def holds(self, fn: Any, state: State) -> bool:
        return bool(fn(self.ctx(state)))

    def check(self, inv: Invariant, state: State) -> bool:
        if not self._compiled:
            return bool(inv.body(self.ctx(state)))
        fn = self._check_fns.get(inv)
        if fn is None:
            fn = self._check_fns[inv] = self._compiler_().invariant(inv)
        return fn(state.data)

    def checker(self, inv: Invariant) -> Callable[[Data], bool]:
        """``inv``'s test on raw ``State.data`` (compiled when the interpreter is): for
        searches that evaluate one condition in every state."""
        if not self._compiled:
            return lambda data: bool(inv.body(self.ctx_of(data)))
        fn = self._check_fns.get(inv)
        if fn is None:
            fn = self._check_fns[inv] = self._compiler_().invariant(inv)
        return fn

    def violated(self, state: State) -> list[str]:
        return self.violations()(state.data)

    def violations(self) -> Callable[[Data], list[str]]:
        """``violated`` on raw ``State.data``, as one function (the explorer's inner loop
        calls it once per new state: no ``State`` wrapping, no method lookup)."""
        if not self._compiled:
            return lambda data: [
                i.name for i in self.protocol.safety if not self.check(i, State(data))
            ]
        if self._violated_fn is None:
            self._violated_fn = self._compiler_().violated(self.protocol.safety)
        return self._violated_fn

    def step(self, state: State, inst: ActionInstance) -> State | None:
        """The successor of ``state`` by ``inst``, or None when its guard is false."""
        if not self._compiled:
            return self._interpret(state, inst)
        fn = self._step_fns.get(inst)
        if fn is None:
            fn = self._step_fns[inst] = self._compiler_().step(inst)
        data = fn(state.data)
        return None if data is None else State(data)

    def successors(self, state: State) -> Iterator[tuple[ActionInstance, State]]:
        """Every enabled instance with its successor, in ``Instance.all_instances`` order."""
        if not self._compiled:
            for inst in self.inst.all_instances:
                nxt = self._interpret(state, inst)
                if nxt is not None:
                    yield inst, nxt
            return
        for inst, data in self.successor_data(state.data):
            yield inst, State(data)

    def successor_data(self, data: tuple[tuple[Any, ...], ...]) -> list[tuple[ActionInstance, Any]]:
        """``successors`` on raw ``State.data`` (the explorer's inner loop: no wrapping)."""
        return self.successor_fn()(data)

    def successor_fn(self) -> Callable[[Data], list[tuple[ActionInstance, Any]]]:
        """``successor_data`` as one function (the generated one when compiled)."""
        if not self._compiled:
            return lambda data: [(i, s.data) for i, s in self.successors(State(data))]
        if self._succ_fn is None:
            self._succ_fn = self._compiler_().successors(self.inst.all_instances)
        return self._succ_fn

    def enabled(self, state: State, inst: ActionInstance) -> bool:
        return self.step(state, inst) is not None

    def diff(self, before: State, after: State) -> list[tuple[str, tuple[int, ...], Any, Any]]:
        """(var, args, old, new) for every cell that changed."""
        out = []
        for i, v in enumerate(self.protocol.vars):
            old_row, new_row = before.data[i], after.data[i]
            if old_row == new_row:
                continue
            for args, o, n in zip(self.cells[v.name], old_row, new_row, strict=True):
                if o != n:
                    out.append((v.name, args, o, n))
        return out

    # -- the reference interpreter -------------------------------------------------------
    def _interpret(self, state: State, inst: ActionInstance) -> State | None:
        data = self.interpret(state.data, inst)
        return None if data is None else State(data)

    def interpret(self, data: Data, inst: ActionInstance) -> Data | None:
        """The action body run on a ``Ctx`` over ``data``, as written: the successor's data,
        or None when a guard is false. The compiler falls back on it."""
        ctx = self.ctx_of(data)
        self._bodies[inst.action](ctx, *inst.args)
        if not all(ctx.guards):
            return None
        out = list(data)
        for var, ops in ctx.ops.items():
            i = self.inst.var_index[var]
            out[i] = tuple(apply_row(self.logic, ops, self.cells[var], out[i]))
        return tuple(out)

    def _compiler_(self) -> Compiler:
        if self._compiler is None:
            self._compiler = Compiler(self)
        return self._compiler
