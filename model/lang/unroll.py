"""Finite symbolic unrolling: one Z3 state per step, one transition relation per step.

Each action instance (an action with concrete arguments) is evaluated once per step over
the symbolic pre-state; the Z3 backend folds constants, so instances that are statically
disabled vanish and cells that no enabled instance can change keep their previous term
(no new variable). The choice of instance at step k is one bit-vector ``act_k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from kvproof.model.lang.context import Ctx, apply_row
from kvproof.model.lang.dsl import Enum
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.logic import Z3Logic


class _StepView:
    """Reads of the symbolic state at step ``k``."""

    def __init__(self, unroller: Unroller, k: int) -> None:
        self.cells = unroller.states[k]
        self.inst = unroller.inst

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        return self.cells[var][self.inst.flat(var, args)]


class Unroller:
    """``free``: state 0 is any state (every cell a constant in its range, no initial
    condition), for one step from it (Houdini's ``model/search/step.py``); its constants
    are named ``x``, ``x'`` and ``act`` rather than ``x@0``, ``x@1`` and ``act@0``."""

    def __init__(
        self,
        inst: Instance,
        solver: z3.Solver | None = None,
        symmetry: bool = True,
        free: bool = False,
    ) -> None:
        self.inst = inst
        self.protocol = inst.protocol
        self.free = free
        self.logic = Z3Logic(dict(inst.sizes), inst.protocol.enums, enum_as_bv=True)
        self.solver = solver or z3.SolverFor("QF_FD")
        self.cells = {v.name: inst.cells(v) for v in self.protocol.vars}
        self.states: list[dict[str, list[Any]]] = [self._initial()]
        self.choices: list[tuple[z3.BitVecRef, list[ActionInstance]]] = []
        # Symmetry breaking: element e of a symmetric sort is first used only after e-1.
        self.symmetric = inst.protocol.symmetric if symmetry else ()
        self.touched: list[dict[tuple[str, int], Any]] = [
            {(s, e): False for s in self.symmetric for e in range(inst.sizes[s])}
        ]
        init = True if free else self.protocol.init(self.ctx(0))
        if init is not True:
            self.solver.add(init)

    def _name(self, base: str, k: int) -> str:
        if self.free:
            return base if k == 0 else f"{base}'"
        return f"{base}@{k}"

    def _initial(self) -> dict[str, list[Any]]:
        state: dict[str, list[Any]] = {}
        for v in self.protocol.vars:
            if not (self.free or v.rigid):
                state[v.name] = [v.default] * len(self.cells[v.name])
                continue
            sort = self.logic.sort_of(v.kind)
            row = [
                z3.Const(self._name(self.inst.describe(v.name, a), 0), sort)
                for a in self.cells[v.name]
            ]
            if self.free and isinstance(v.kind, Enum) and len(v.kind.values) < 2 ** sort.size():
                # a bit-vector wider than the enum: stay in range
                self.solver.add(*(z3.ULT(c, len(v.kind.values)) for c in row))
            state[v.name] = row
        return state

    def ctx(self, k: int) -> Ctx:
        return Ctx(self.logic, _StepView(self, k))

    @property
    def depth(self) -> int:
        return len(self.states) - 1

    def extend(self) -> None:
        """Add one transition (state k -> k+1)."""
        k = self.depth
        pre = self.states[k]
        enabled: list[tuple[ActionInstance, Any, dict[str, list[Any]]]] = []
        for inst in self.inst.all_instances:
            ctx = self.ctx(k)
            self.protocol.action(inst.action).body(ctx, *inst.args)
            guard = self.logic.and_(*ctx.guards)
            if guard is False:
                continue
            enabled.append((inst, guard, self._apply(pre, ctx)))
        bits = max(1, (len(enabled) - 1).bit_length())
        act = z3.BitVec(self._name("act", k), bits)
        if len(enabled) < 2**bits:
            self.solver.add(z3.ULT(act, len(enabled)))
        sels = [act == i for i in range(len(enabled))]
        for sel, (_, guard, _) in zip(sels, enabled, strict=True):
            if guard is not True:
                self.solver.add(z3.Implies(sel, guard))
        if not enabled:  # deadlock at every state of this depth: no trace is longer
            self.solver.add(False)
        self._break_symmetry(k, sels, [e[0] for e in enabled])
        post: dict[str, list[Any]] = {}
        for v in self.protocol.vars:
            old_row = pre[v.name]
            if v.rigid:
                post[v.name] = old_row
                continue
            row = []
            for j, old in enumerate(old_row):
                value = select_cell(self.logic, sels, enabled, v.name, j, old)
                if value is old or isinstance(value, bool | str):
                    row.append(value)
                else:
                    name = self.inst.describe(v.name, self.cells[v.name][j])
                    fresh = z3.Const(self._name(name, k + 1), self.logic.sort_of(v.kind))
                    self.solver.add(fresh == self.logic.lift(value, sort=fresh.sort()))
                    row.append(fresh)
            post[v.name] = row
        self.states.append(post)
        self.choices.append((act, [e[0] for e in enabled]))

    def _break_symmetry(self, k: int, sels: list[Any], chosen: list[ActionInstance]) -> None:
        if not self.symmetric:
            return
        before = self.touched[k]
        after = dict(before)
        for sel, inst in zip(sels, chosen, strict=True):
            params = self.protocol.action(inst.action).params
            for sort in self.symmetric:
                mine = {a for s, a in zip(params, inst.args, strict=True) if s == sort}
                for e in mine:
                    after[(sort, e)] = self.logic.or_(after[(sort, e)], sel)
                    if e > 0 and (e - 1) not in mine:
                        prev = before[(sort, e - 1)]
                        if prev is not True:
                            self.solver.add(
                                z3.Implies(sel, prev) if prev is not False else z3.Not(sel)
                            )
        for key, value in after.items():
            if not isinstance(value, bool):
                fresh = z3.Bool(f"touched:{key[0]}{key[1]}@{k + 1}")
                self.solver.add(fresh == value)
                after[key] = fresh
        self.touched.append(after)

    def _apply(self, pre: dict[str, list[Any]], ctx: Ctx) -> dict[str, list[Any]]:
        """The rows an action instance changes (others are absent)."""
        return {
            var: apply_row(self.logic, ops, self.cells[var], pre[var])
            for var, ops in ctx.ops.items()
        }

    # -- reading a model -----------------------------------------------------------------
    def trace_from_model(
        self, model: z3.ModelRef, length: int
    ) -> tuple[dict[str, dict[tuple[int, ...], Any]], list[ActionInstance]]:
        """The model's values of the rigid variables at state 0 (free: of every variable)
        and its first ``length`` steps."""
        init: dict[str, dict[tuple[int, ...], Any]] = {}
        for v in self.protocol.vars:
            if not (self.free or v.rigid):
                continue
            values = {}
            for args, term in zip(self.cells[v.name], self.states[0][v.name], strict=True):
                val = model.eval(term, model_completion=True)
                values[args] = z3.is_true(val) if v.kind == "bool" else self.logic.enum_value(val)
            init[v.name] = values
        steps = []
        for k in range(length):
            act, options = self.choices[k]
            idx = model.eval(act, model_completion=True).as_long()
            steps.append(options[idx])
        return init, steps


def select_cell(
    logic: Z3Logic,
    sels: Sequence[Any],
    enabled: Sequence[tuple[Any, Any, dict[str, list[Any]]]],
    var: str,
    j: int,
    old: Any,
) -> Any:
    """Cell ``j`` of ``var`` after the step: the new value of whichever enabled action the
    selector ``sels[i]`` picks (``enabled[i] = (instance, guard, changed rows)``), else
    ``old``; ``old`` itself when no action changes the cell (callers test with ``is``)."""
    value = old
    for sel, (_, _, new) in zip(sels, enabled, strict=True):
        cell = new.get(var)
        if cell is not None and cell[j] is not old:
            value = logic.ite(sel, cell[j], value)
    return value
