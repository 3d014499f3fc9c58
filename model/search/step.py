"""One step of a protocol as a Z3 query (a free pre-state, an action, the post-state), and
the conjuncts it asks about, evaluated concretely.

Two encodings, used by Houdini (``model/search/houdini.py``: ``small_inductive`` on
``FiniteStep``, ``houdini`` on both) to ask "does some state that satisfies these conjuncts
step to one that breaks one of those?":

- ``FiniteStep``: a fixed instance (sorts of 2-3 elements); every cell is a Z3 constant and
  every action instance one choice of a bit-vector, so the query is propositional (Z3's
  finite-domain solver) and a model is a pre-state of exactly that instance;
- ``SymbolicStep``: uninterpreted sorts (``model/search/induction.py``'s encoding), one query per
  action with symbolic arguments; an ``unsat`` holds for every size.

Both build the post-state from the DSL's one update semantics (``model/lang/context.py``'s
``apply_row``/``apply_ops``: ``FiniteStep`` is BMC's unrolling, ``model/lang/unroll.py``,
one step from a free state; ``SymbolicStep`` reads through ``induction.PostView``), never
their own.

A model becomes a concrete pre-state and action instance (``Cex``): Houdini re-runs the
action with the concrete interpreter and evaluates every conjunct there (``Checker``: a
candidate clause, ``candidates.py``, or a safety invariant, on a state of any instance), so
a solver answer is never trusted unchecked (mypyvy's ``--smoke-test-solver``). Houdini on a
finite instance evaluates hundreds of clauses on every state it meets (each
counterexample's successors, and theirs), so ``ClauseTable`` compiles each clause once into
arrays of cell indices and values, one row per assignment of its quantified variables, and
a state is one int vector: a clause is broken where some row's cells all hold its values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.unroll import Unroller
from kvproof.model.search.candidates import Clause, Evaluator, cell_codes, ground
from kvproof.model.search.induction import ProofError, Prover


@dataclass(frozen=True)
class Cex:
    """A pre-state of a finite instance and the action instance taken from it."""

    sizes: dict[str, int]
    pre: State
    action: ActionInstance


class FiniteStep(Unroller):
    """Every action instance of one finite instance, from a free pre-state."""

    def __init__(self, protocol: Protocol, sizes: dict[str, int]) -> None:
        super().__init__(Instance(protocol, sizes), symmetry=False, free=True)
        self.concrete = Concrete(self.inst)
        self.extend()
        self.pre, self.post = self.states
        self.small = None  # a finite instance is small already
        self._lits: dict[tuple[int, Any], Any] = {}

    def formula(self, c: Conjunct, post: bool) -> Any:
        """A conjunct over the pre- or the post-state."""
        if c.clause is not None:
            return self.clause(c.clause, post)
        return self.logic.lift(c.inv.body(self.ctx(int(post))))

    def clause(self, clause: Clause, post: bool) -> Any:
        """A clause, ground over the instance, built straight from cell literals (fast)."""
        cells = self.post if post else self.pre
        rows = [cells[v.name] for v in self.protocol.vars]
        out = []
        for cube in ground(self.inst, clause):
            lits = []
            for i, j, value in cube:
                x = self._differs(rows[i][j], value)
                if x is True:
                    break
                if x is not False:
                    lits.append(x)
            else:
                if not lits:
                    return z3.BoolVal(False)
                out.append(lits[0] if len(lits) == 1 else _nary(z3.Z3_mk_or, lits))
        return _nary(z3.Z3_mk_and, out) if out else z3.BoolVal(True)

    def _differs(self, cell: Any, value: Any) -> Any:
        """``cell != value`` as a Z3 literal, or a Python bool when the cell is constant."""
        if not isinstance(cell, z3.ExprRef):
            return cell != value
        key = (cell.get_id(), value)
        got = self._lits.get(key)
        if got is None:
            if value is True:
                got = z3.Not(cell)
            elif value is False:
                got = cell
            else:
                got = cell != self.logic.lift(value, sort=cell.sort())
            self._lits[key] = got
        return got

    def cex(self, model: z3.ModelRef) -> Cex:
        values, (action,) = self.trace_from_model(model, 1)
        return Cex(dict(self.inst.sizes), self.concrete.make_state(values), action)


def _nary(mk: Any, args: list[Any]) -> z3.BoolRef:
    """``z3.And``/``z3.Or`` of Boolean terms without z3py's per-argument coercion (most of
    the time of grounding hundreds of candidate clauses)."""
    ctx = args[0].ctx
    arr = (z3.Ast * len(args))(*(a.as_ast() for a in args))
    return z3.BoolRef(mk(ctx.ref(), len(args), arr), ctx)


class SymbolicStep:
    """One action with symbolic arguments over uninterpreted sorts."""

    def __init__(self, prover: Prover, action_name: str) -> None:
        self.prover = prover
        self.action = prover.protocol.action(action_name)
        self.params, self.guard, self.post = prover.encode(self.action)
        self.disabled = z3.is_false(z3.simplify(self.guard))
        self.solver = z3.Solver()
        self.solver.set("timeout", prover.timeout_ms)
        self.solver.add(self.guard)
        # Under ``small``, each sort has at most 3 elements: models stay small and quick
        # (Houdini asks again without it before it trusts an unsat).
        self.small = z3.Bool(f"small:{self.action.name}")
        for name, sort in prover.sorts.items():
            elems = [z3.Const(f"{name}!{i}", sort) for i in range(3)]
            x = z3.Const(f"{name}!x", sort)
            self.solver.add(z3.Implies(self.small, z3.ForAll([x], z3.Or(*(x == e for e in elems)))))

    def formula(self, c: Conjunct, post: bool) -> Any:
        view = self.post if post else self.prover.pre
        return self.prover.logic.lift(c.inv.body(self.prover.ctx(view)))

    def cex(self, model: z3.ModelRef) -> Cex:
        concrete, pre, action = self.prover.decode(model, self.prover.pre, self.action, self.params)
        assert action is not None
        return Cex(dict(concrete.inst.sizes), pre, action)


def symbolic_steps(prover: Prover) -> list[SymbolicStep]:
    steps = [SymbolicStep(prover, a.name) for a in prover.protocol.actions]
    return [s for s in steps if not s.disabled]


class ClauseTable:
    """``broken(data)``: which of ``clauses`` the state ``data`` (``State.data``) breaks."""

    def __init__(self, concrete: Concrete, clauses: Sequence[Clause]) -> None:
        self.n = len(clauses)
        offsets, self._codes = cell_codes(concrete)
        # One group per clause length: (clause positions, cells[c, env, lit], values[...]).
        groups: dict[int, list[tuple[int, list[list[int]], list[list[int]]]]] = {}
        for pos, c in enumerate(clauses):
            plan = ground(concrete.inst, c)
            cells = [[offsets[i] + j for i, j, _ in cube] for cube in plan]
            values = [[self._codes[i][v] for i, _, v in cube] for cube in plan]
            groups.setdefault(len(c.cube), []).append((pos, cells, values))
        self._groups = []
        for rows in groups.values():
            most = max(len(cells) for _, cells, _ in rows)
            # Pad with copies of a clause's first row: a repeated row changes no answer.
            cells_a = np.array([c + [c[0]] * (most - len(c)) for _, c, _ in rows], dtype=np.int64)
            values_a = np.array([v + [v[0]] * (most - len(v)) for _, _, v in rows], dtype=np.int8)
            where = np.array([pos for pos, _, _ in rows], dtype=np.int64)
            self._groups.append((where, cells_a, values_a))

    def broken(self, data: Any) -> np.ndarray:
        """A boolean array over the clauses: True where ``data`` breaks the clause."""
        flat = np.fromiter(
            (codes[x] for codes, row in zip(self._codes, data, strict=True) for x in row),
            dtype=np.int8,
        )
        out = np.zeros(self.n, dtype=bool)
        for where, cells, values in self._groups:
            out[where] = (flat[cells] == values).all(axis=2).any(axis=1)
        return out


@dataclass
class Conjunct:
    """A named conjunct: a candidate clause, or one of the protocol's safety invariants."""

    name: str
    inv: Invariant
    clause: Clause | None = None

    @property
    def safety(self) -> bool:
        return self.clause is None

    @property
    def size(self) -> int:
        return len(self.clause.cube) if self.clause else 0


class Checker:
    """Concrete evaluation of conjuncts on states of any instance (cached per size)."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._by_size: dict[tuple[tuple[str, int], ...], Evaluator] = {}

    def get(self, sizes: dict[str, int]) -> Evaluator:
        key = tuple(sorted(sizes.items()))
        got = self._by_size.get(key)
        if got is None:
            got = self._by_size[key] = Evaluator(Concrete(Instance(self.protocol, sizes)))
        return got

    def holds(self, c: Conjunct, sizes: dict[str, int], state: State) -> bool:
        ev = self.get(sizes)
        if c.clause is not None:
            return ev.holds(c.clause, state.data)
        return ev.concrete.check(c.inv, state)

    def post(self, cex: Cex) -> State:
        post = self.get(cex.sizes).concrete.step(cex.pre, cex.action)
        if post is None:
            raise ProofError(f"Houdini counterexample: {cex.action} is not enabled concretely")
        return post
