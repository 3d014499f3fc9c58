"""A test oracle: liveness by bounded model checking in Z3, lassos by a loop-back constraint.

Not part of the product (``check`` has one liveness engine, the explicit-state graph of
``model/search/lasso.py``): a second, independent encoding kept here so each cross-checks
the other on every variant (``test_liveness_engines.py``, ``test_liveness.py``).

A lasso of length ``k`` is ``s_0 .. s_k`` (the unrolled
transition relation, ``model/lang/unroll.py``, without symmetry breaking: a loop must be a
loop of the real system) with, for some ``l``:

- **loop-back**: ``s_k = s_l`` (``l < k``: the steps ``l .. k-1`` repeat forever); or
  ``l = k``: the run stutters in ``s_k`` forever (an empty loop);
- **pending**: a monitor ``m_j = not goal(s_j) and (m_{j-1} or trigger(s_j))`` is set at
  ``k``, and ``goal`` is false in every loop state (a trigger inside the loop repeats);
- **weak fairness** over the loop: every obligation instance (``model/lang/liveness.py``)
  is disabled in some loop state or taken by some loop step (``l = k``: disabled in
  ``s_k``).

``k`` grows from 0, so the first lasso found is a shortest one (stem plus loop). A property
with no lasso up to ``depth`` holds *to that depth* only; the explicit search is complete.
Every lasso is replayed concretely (``lasso_trace``) before it is reported.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.liveness import Fair, Liveness, fairness
from kvproof.model.lang.trace import Trace
from kvproof.model.lang.unroll import Unroller
from kvproof.model.search.lasso import (
    LivenessResult,
    fair_labels,
    instances_of,
    judge,
    lasso_trace,
    selected,
)


def bmc_lassos(
    protocol: Protocol,
    sizes: dict[str, int],
    depth: int = 12,
    *,
    variant: str = "",
    names: tuple[str, ...] | None = None,
) -> LivenessResult:
    """A shortest fair lasso (stem + loop <= ``depth`` steps) for each property."""
    start = time.perf_counter()
    props = selected(protocol, names)
    obligations = fairness(protocol)
    inst = Instance(protocol, sizes)
    bmc = _Lassos(Unroller(inst, symmetry=False), obligations)
    concrete = Concrete(inst)

    def find(prop: Liveness) -> tuple[Trace, tuple[State, ...], tuple[int, ...]] | None:
        found = bmc.shortest(prop, depth)
        if found is None:
            return None
        init, steps, loop, args = found
        first = concrete.make_state(init).data
        stem, cycle = steps[:loop], steps[loop:]
        trace, states = lasso_trace(concrete, first, stem, cycle, prop, args, variant, "bmc")
        return trace, states, args

    return LivenessResult(
        variant=variant,
        sizes=dict(sizes),
        engine="bmc",
        results=judge(props, find),
        states=0,
        transitions=0,
        fair=fair_labels(obligations),
        seconds=time.perf_counter() - start,
        depth=depth,
    )


class _Lassos:
    """The loop-back encoding over one unroller, extended on demand."""

    def __init__(self, unroller: Unroller, obligations: tuple[Fair, ...]) -> None:
        self.u = unroller
        self.logic = unroller.logic
        self.solver = unroller.solver
        self.obligations = obligations
        fair_actions = {f.action for f in obligations}
        self.instances = [i for i in unroller.inst.all_instances if i.action in fair_actions]
        self._fair_at: dict[tuple[int, int], Any] = {}

    def _reach(self, k: int) -> None:
        while self.u.depth < k:
            self.u.extend()

    def _cond(self, fn: Any, j: int, args: tuple[int, ...]) -> Any:
        return self.logic.lift(fn(self.u.ctx(j), *args), sort=z3.BoolSort())

    def fair_enabled(self, j: int, i: int) -> Any:
        """Obligation instance ``i`` is enabled (and under its ``when``) in ``s_j``."""
        key = (j, i)
        if key not in self._fair_at:
            inst = self.instances[i]
            ctx = self.u.ctx(j)
            self.u.protocol.action(inst.action).body(ctx, *inst.args)
            guard = self.logic.and_(*ctx.guards)
            whens = [
                f.when for f in self.obligations if f.action == inst.action and f.when is not None
            ]
            plain = any(f.action == inst.action and f.when is None for f in self.obligations)
            if not plain:
                guard = self.logic.and_(
                    guard, self.logic.or_(*(self._cond(w, j, inst.args) for w in whens))
                )
            self._fair_at[key] = self.logic.lift(guard, sort=z3.BoolSort())
        return self._fair_at[key]

    def taken(self, j: int, i: int) -> Any:
        """Step ``j`` (``s_j -> s_{j+1}``) takes obligation instance ``i``."""
        act, options = self.u.choices[j]
        inst = self.instances[i]
        if inst not in options:
            return z3.BoolVal(False)
        return z3.And(act == options.index(inst), self.fair_enabled(j, i))

    def same(self, a: int, b: int) -> Any:
        eqs = []
        for v in self.u.protocol.vars:
            if v.rigid:
                continue
            for x, y in zip(self.u.states[a][v.name], self.u.states[b][v.name], strict=True):
                eqs.append(self.logic.eq(x, y))
        return self.logic.lift(self.logic.and_(*eqs), sort=z3.BoolSort())

    def lasso(self, prop: Liveness, args: tuple[int, ...], k: int, loop: int) -> Any:
        trig = [self._cond(prop.trigger, j, args) for j in range(k + 1)]
        goal = [self._cond(prop.goal, j, args) for j in range(k + 1)]
        mon: Any = z3.BoolVal(False)
        for j in range(k + 1):
            mon = z3.And(z3.Not(goal[j]), z3.Or(mon, trig[j]))
        parts = [mon, *(z3.Not(goal[j]) for j in range(loop, k + 1))]
        if loop < k:
            parts.append(self.same(loop, k))
        for i in range(len(self.instances)):
            if loop == k:
                parts.append(z3.Not(self.fair_enabled(k, i)))
            else:
                parts.append(
                    z3.Or(
                        *(z3.Not(self.fair_enabled(j, i)) for j in range(loop, k)),
                        *(self.taken(j, i) for j in range(loop, k)),
                    )
                )
        return z3.And(*parts)

    def shortest(
        self, prop: Liveness, depth: int
    ) -> tuple[dict, list[ActionInstance], int, tuple[int, ...]] | None:
        every = list(instances_of(self.u.inst, prop))
        for k in range(depth + 1):
            self._reach(k)
            picks = []
            for args in every:
                for loop in range(k + 1):
                    picks.append((z3.Bool(f"lasso:{prop.name}{args}@{loop}/{k}"), args, loop))
            self.solver.push()
            for sel, args, loop in picks:
                self.solver.add(z3.Implies(sel, self.lasso(prop, args, k, loop)))
            self.solver.add(z3.Or(*(sel for sel, _, _ in picks)))
            if self.solver.check() == z3.sat:
                model = self.solver.model()
                sel, args, loop = next(p for p in picks if z3.is_true(model.eval(p[0])))
                init, steps = self.u.trace_from_model(model, k)
                self.solver.pop()
                return init, steps, loop, args
            self.solver.pop()
        return None
