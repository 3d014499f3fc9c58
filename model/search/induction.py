"""Inductive-invariant proofs over uninterpreted sorts: isolation for any number of
requests and pages, at any depth.

Three queries, as in Apalache: (1) init implies every conjunct; (2) the conjunction and any
action (with arbitrary arguments) implies each conjunct in the post-state; (3) the
conjunction implies each safety invariant. Sorts are uninterpreted Z3 sorts, state
variables are Z3 functions, quantifiers are real, so an ``unsat`` holds for every size.
The invariants stay in the decidable fragment the way Ivy/mypyvy keep them: universally
quantified conjuncts over the state, existentials only in guards (skolemised).

The post-state is not a new set of functions: each read of it is the pre-state read with
the action's updates applied (``ite`` on the arguments), so no frame axioms are needed.

A failed consecution query gives a counterexample to induction (CTI): a finite pre-state
(the model's universe), the action and its arguments. It is re-checked with the concrete
interpreter on an instance of exactly that size before it is reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.context import Ctx, apply_ops
from kvproof.model.lang.dsl import Action, Invariant, Protocol
from kvproof.model.lang.explain import step_label
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.logic import Z3Logic
from kvproof.model.search.steady import steady


class ProofError(RuntimeError):
    """A solver answer that the concrete interpreter contradicts: a kvproof bug."""


@dataclass(frozen=True)
class Cti:
    """A counterexample to induction, re-checked concretely. Plain data (it pickles and
    crosses process boundaries): the protocol is named, with its switches, not held."""

    query: str  # "init", "consecution" or "safety"
    conjunct: str
    sizes: dict[str, int]
    pre: State | None
    action: ActionInstance | None
    post: State | None
    protocol: str  # the protocol's name
    switches: Any = field(default=None, repr=False)  # the protocol's switches (plain data)
    pre_cells: tuple[str, ...] = ()  # the pre-state's non-default cells, for people
    changes: tuple[str, ...] = ()  # what the action changed, for people
    label: str = ""  # the action as people read it, ``land(r0, p0)``

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "conjunct": self.conjunct,
            "sizes": self.sizes,
        }
        if self.pre is not None:
            out["pre"] = list(self.pre_cells)
        if self.action is not None:
            out["action"] = self.label or str(self.action)
        if self.pre is not None and self.post is not None:
            out["changes"] = list(self.changes)
        return out


@dataclass(frozen=True)
class ProofResult:
    protocol: str
    proved: bool
    conjuncts: tuple[str, ...]
    queries: int
    seconds: float
    cti: Cti | None = None
    unknown: str | None = None
    # (action, conjunct) -> the conjuncts its consecution query needed (unsat core)
    cores: dict[str, list[str]] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        if self.proved:
            return (
                f"proved for all numbers of requests and pages ({self.queries} queries, "
                f"{self.seconds:.2f} s)"
            )
        if self.cti is not None:
            shown = self.cti.label or self.cti.action
            where = f" after {shown}" if self.cti.action else ""
            return f"{self.cti.conjunct} is not inductive{where} ({self.cti.query})"
        return f"solver answered unknown: {self.unknown}"

    def to_json(self) -> dict[str, Any]:
        return {
            "proved": self.proved,
            "summary": self.summary,
            "conjuncts": list(self.conjuncts),
            "queries": self.queries,
            "seconds": round(self.seconds, 4),
            "cti": self.cti.describe() if self.cti else None,
            "unknown": self.unknown,
            "cores": self.cores,
        }


class FnView:
    """The pre-state: every variable is a Z3 function over the uninterpreted sorts."""

    def __init__(self, fns: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        self.fns = fns
        self.defaults = defaults or {}

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        if var in self.defaults:
            return self.defaults[var]
        fn = self.fns[var]
        return fn(*args) if args else fn


class PostView:
    """The post-state of one action: pre-state reads with the action's updates applied."""

    def __init__(self, pre: FnView, ctx: Ctx, logic: Z3Logic) -> None:
        self.pre, self.ops, self.logic = pre, ctx.ops, logic

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        return apply_ops(self.logic, self.ops.get(var, ()), args, self.pre.read(var, args))


class Prover:
    def __init__(self, protocol: Protocol, timeout_ms: int = 60_000) -> None:
        self.protocol = protocol
        self.timeout_ms = timeout_ms
        self.sorts = {s: z3.DeclareSort(s) for s in protocol.sorts}
        self.logic = Z3Logic(dict(self.sorts), protocol.enums)
        self.fns: dict[str, Any] = {}
        for v in protocol.vars:
            rng = self.logic.sort_of(v.kind)
            dom = [self.sorts[s] for s in v.args]
            self.fns[v.name] = z3.Function(v.name, *dom, rng) if dom else z3.Const(v.name, rng)
        self.pre = FnView(self.fns)
        self.conjuncts: tuple[Invariant, ...] = protocol.safety + protocol.strengthening
        self.queries = 0

    def ctx(self, view: Any) -> Ctx:
        return Ctx(self.logic, view)

    def encode(self, action: Action) -> tuple[list[Any], Any, PostView]:
        """``action`` with symbolic arguments: its parameters, its guard, its post-state."""
        params = [
            z3.Const(f"{action.name}_{i}_{s}", self.sorts[s]) for i, s in enumerate(action.params)
        ]
        ctx = self.ctx(self.pre)
        action.body(ctx, *params)
        guard = self.logic.lift(self.logic.and_(*ctx.guards))
        return params, guard, PostView(self.pre, ctx, self.logic)

    def decode(
        self, model: z3.ModelRef, view: Any, action: Action | None = None, params: Any = ()
    ) -> tuple[Concrete, State, ActionInstance | None]:
        """A model as a state of an instance of exactly its universes' sizes (read through
        ``view``), and the action instance its ``params`` take."""
        universes = {}
        for name, sort in self.sorts.items():
            universes[name] = list(model.get_universe(sort) or []) or [z3.FreshConst(sort)]
        sizes = {k: len(v) for k, v in universes.items()}
        index = {n: {str(e): i for i, e in enumerate(es)} for n, es in universes.items()}
        concrete = Concrete(Instance(self.protocol, sizes))
        values = {}
        for v in self.protocol.vars:
            cells = {}
            for args in concrete.inst.cells(v):
                terms = tuple(universes[s][a] for s, a in zip(v.args, args, strict=True))
                term = self.logic.lift(view.read(v.name, terms), sort=self.logic.sort_of(v.kind))
                val = model.eval(term, model_completion=True)
                cells[args] = z3.is_true(val) if v.kind == "bool" else self.logic.enum_value(val)
            values[v.name] = cells
        if action is None:
            return concrete, concrete.make_state(values), None
        args_ = tuple(
            index[s][str(model.eval(p, model_completion=True))]
            for s, p in zip(action.params, params, strict=True)
        )
        return concrete, concrete.make_state(values), ActionInstance(action.name, args_)

    def init_view(self) -> FnView:
        """The initial state: every variable but the rigid ones at its default."""
        return FnView(self.fns, {v.name: v.default for v in self.protocol.vars if not v.rigid})

    def _solver(self) -> z3.Solver:
        solver = z3.Solver()
        solver.set("timeout", self.timeout_ms)
        return solver

    def _formula(self, inv: Invariant, view: Any) -> Any:
        return self.logic.lift(inv.body(self.ctx(view)))

    def _check(self, solver: z3.Solver, *assumptions: Any) -> z3.CheckSatResult:
        self.queries += 1
        return solver.check(*assumptions)

    # -- the three queries ---------------------------------------------------------------
    def prove(self) -> ProofResult:
        start = time.perf_counter()
        names = tuple(c.name for c in self.conjuncts)
        cores: dict[str, list[str]] = {}

        def done(proved: bool = False, **kw: Any) -> ProofResult:
            took = time.perf_counter() - start
            return ProofResult(
                self.protocol.name, proved, names, self.queries, took, cores=cores, **kw
            )

        # (1) init => each conjunct
        init_view = self.init_view()
        for c in self.conjuncts:
            solver = self._solver()
            init = self.logic.lift(self.protocol.init(self.ctx(init_view)))
            solver.add(init, z3.Not(self._formula(c, init_view)))
            res = self._check(solver)
            if res == z3.sat:
                return done(cti=self._cti("init", c, solver.model(), init_view))
            if res == z3.unknown:
                return done(unknown=f"init/{c.name}: {solver.reason_unknown()}")
        # (2) inv & action => each conjunct'
        for action in self.protocol.actions:
            params, guard, post = self.encode(action)
            if z3.is_false(z3.simplify(guard)):
                continue
            solver = self._solver()
            lits = []
            for c in self.conjuncts:
                lit = z3.Bool(f"inv:{c.name}")
                solver.add(z3.Implies(lit, self._formula(c, self.pre)))
                lits.append(lit)
            solver.add(guard)
            for c in self.conjuncts:
                goal = z3.Bool(f"goal:{c.name}")
                solver.add(z3.Implies(goal, z3.Not(self._formula(c, post))))
                res = self._check(solver, goal, *lits)
                if res == z3.sat:
                    model = self._small_model(solver, [goal, *lits])
                    cti = self._cti("consecution", c, model, self.pre, action, params)
                    return done(cti=cti)
                if res == z3.unknown:
                    return done(unknown=f"{action.name}/{c.name}: {solver.reason_unknown()}")
                core = [str(x)[4:] for x in solver.unsat_core() if str(x).startswith("inv:")]
                cores[f"{action.name}/{c.name}"] = sorted(core)
        # (3) inv => each safety invariant (trivial when safety is among the conjuncts,
        # asked anyway so the answer is the solver's, not ours)
        for s in self.protocol.safety:
            solver = self._solver()
            for c in self.conjuncts:
                solver.add(self._formula(c, self.pre))
            solver.add(z3.Not(self._formula(s, self.pre)))
            res = self._check(solver)
            if res != z3.unsat:
                return done(unknown=f"safety/{s.name}: {res}")
        return done(True)

    # -- counterexamples to induction ----------------------------------------------------
    def _small_model(self, solver: z3.Solver, assumptions: list[Any]) -> z3.ModelRef:
        """A model with the fewest elements per sort (sort by sort), for readable CTIs."""
        model = solver.model()
        for name, sort in self.sorts.items():
            for n in range(1, 6):
                consts = [z3.Const(f"{name}!{i}", sort) for i in range(n)]
                x = z3.Const(f"{name}!x", sort)
                bound = z3.ForAll([x], z3.Or(*(x == c for c in consts)))
                solver.push()
                solver.add(bound)
                res = self._check(solver, *assumptions)
                if res == z3.sat:
                    model = solver.model()
                    # keep this bound for the next sorts
                    solver.pop()
                    solver.add(z3.Implies(assumptions[0], bound))
                    break
                solver.pop()
        return model

    def _cti(
        self,
        query: str,
        conjunct: Invariant,
        model: z3.ModelRef,
        view: Any,
        action: Action | None = None,
        params: Any = (),
    ) -> Cti:
        """The model's pre-state (read through ``view``) and step, re-checked concretely."""
        concrete, pre, inst_a = self.decode(model, view, action, params)
        post = None if inst_a is None else concrete.step(pre, inst_a)
        if inst_a is None:
            if concrete.check(conjunct, pre):
                raise ProofError(f"init CTI for {conjunct.name} does not replay")
        else:
            # mypyvy's smoke test: the solver's CTI must be one for the plain interpreter too.
            broken = [c.name for c in self.conjuncts if not concrete.check(c, pre)]
            if post is None or broken or concrete.check(conjunct, post):
                raise ProofError(
                    f"CTI for {conjunct.name} after {step_label(concrete, inst_a)} does not"
                    f" replay concretely (enabled={post is not None}, pre violates {broken})"
                )
        cells, changes = for_people(concrete, pre, post)
        label = "" if inst_a is None else step_label(concrete, inst_a)
        p, sizes = self.protocol, dict(concrete.inst.sizes)
        shown = (tuple(cells), tuple(changes), label)
        return Cti(query, conjunct.name, sizes, pre, inst_a, post, p.name, p.switches, *shown)


@steady
def prove(protocol: Protocol, timeout_ms: int = 60_000) -> ProofResult:
    return Prover(protocol, timeout_ms).prove()


def for_people(
    concrete: Concrete, pre: State, post: State | None = None
) -> tuple[list[str], list[str]]:
    """A step for people: the pre-state's non-default cells, and what it changed."""
    name = concrete.inst.describe
    cells = [f"{name(v, a)} = {n}" for v, a, _, n in concrete.diff(concrete.make_state(), pre)]
    changes = [f"{name(v, a)}: {o} -> {n}" for v, a, o, n in concrete.diff(pre, post or pre)]
    return cells, changes
