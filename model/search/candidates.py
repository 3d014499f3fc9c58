"""Candidate invariants from templates over a protocol's own vocabulary.

A candidate is a universally quantified clause: "for all distinct quantified variables, not
(this cube)", where the cube assigns a value to at most ``k`` atoms. An atom is a state
variable applied to quantified variables (``owns(r0, p0)``, ``dphase(r1)``); a cube literal
gives a boolean atom a truth value or an enum atom one of its values. Negated, a cube is a
clause of ``k`` literals ``b``, ``!b`` or ``e != v``, and every clause over enum membership
(``dphase(r) in {transfer, draining} | ...``) is a conjunction of such clauses, one per
value left out, so this one template covers mypyvy's and DistAI's clause templates.
Quantified variables of one sort are distinct; equal ones are a smaller template.

Candidates come from reachable states (DistAI, "data-driven"): a cube is a candidate when
no reachable state of a small instance has it under any assignment of the quantified
variables, and it is *minimal* (every cube with one literal fewer is seen), so each
candidate says one thing the samples never showed. Houdini (``model/search/houdini.py``) keeps the
inductive ones. Candidates are canonical under renaming quantified variables of one sort.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import BOOL, Invariant, Protocol, Var
from kvproof.model.lang.instance import Instance
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True, order=True)
class Atom:
    var: str
    args: tuple[int, ...]  # indices into the clause's quantified variables


@dataclass(frozen=True, order=True)
class Literal:
    atom: Atom
    value: Any  # the cube's value (bool or enum value name); the clause says "!= value"


@dataclass(frozen=True)
class Clause:
    """``forall distinct qvars. not (cube)``; ``qvars`` are the sorts, in order."""

    qvars: tuple[str, ...]
    cube: tuple[Literal, ...]

    @property
    def text(self) -> str:
        """e.g. ``forall r0 != r1: Req, p0: Page. !owns(r0, p0) | !owns(r1, p0)``: each
        variable the sort's initial, numbered within the sort."""
        names = [f"{s[:1].lower()}{self.qvars[:i].count(s)}" for i, s in enumerate(self.qvars)]
        groups: dict[str, list[str]] = {}
        for s, n in zip(self.qvars, names, strict=True):
            groups.setdefault(s, []).append(n)
        head = ", ".join(f"{' != '.join(ns)}: {s}" for s, ns in groups.items())
        lits = []
        for lit in self.cube:
            call = f"{lit.atom.var}({', '.join(names[i] for i in lit.atom.args)})"
            lits.append({True: f"!{call}", False: call}.get(lit.value, f"{call} != {lit.value}"))
        body = " | ".join(lits)
        return f"forall {head}. {body}" if head else body

    def holds_in(self, ctx: Any) -> Any:
        """The clause as a formula of the DSL context ``ctx`` (any logic backend)."""

        def bind(i: int, env: tuple[Any, ...]) -> Any:
            if i == len(self.qvars):
                return ctx.or_(*(self._lit(ctx, lit, env) for lit in self.cube))
            sort = self.qvars[i]

            def body(x: Any) -> Any:
                # distinct from the earlier variables of its sort, or the clause holds
                same = [ctx.eq(x, y) for s, y in zip(self.qvars, env, strict=False) if s == sort]
                return ctx.or_(*same, bind(i + 1, (*env, x)))

            return ctx.forall(sort, body)

        return bind(0, ())

    @staticmethod
    def _lit(ctx: Any, lit: Literal, env: tuple[Any, ...]) -> Any:
        read = getattr(ctx, lit.atom.var)(*(env[i] for i in lit.atom.args))
        if lit.value is True:
            return ctx.not_(read)
        if lit.value is False:
            return read
        return ctx.ne(read, lit.value)

    def invariant(self, name: str) -> Invariant:
        return Invariant(name, self.holds_in, doc=self.text, safety=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "qvars": list(self.qvars),
            "cube": [[lit.atom.var, list(lit.atom.args), lit.value] for lit in self.cube],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Clause:
        cube = tuple(Literal(Atom(v, tuple(a)), val) for v, a, val in data["cube"])
        return Clause(tuple(data["qvars"]), cube)


@dataclass(frozen=True)
class Templates:
    """How large the template space is: literals per clause, quantified variables."""

    k: int = 4  # literals per clause with at most one variable per sort
    k_wide: int = 3  # literals per clause with two variables of some sort
    per_sort: int = 2  # quantified variables per sort
    total: int = 3  # quantified variables per clause
    max_candidates: int = 20_000  # over this: bad input (shrink the templates)

    def __post_init__(self) -> None:
        # The explicit-state sample has ``per_sort`` elements of each sort and Houdini's
        # finite instance one more: 3 per sort already samples tens of thousands of
        # states per element, 4 would not finish in any budget.
        if not 1 <= self.k <= MAX_LITERALS:
            raise KvproofInputError(f"must be 1..{MAX_LITERALS}, got {self.k}", "--infer-literals")
        if not 1 <= self.per_sort <= MAX_VARS:
            raise KvproofInputError(f"must be 1..{MAX_VARS}, got {self.per_sort}", "--infer-vars")

    @staticmethod
    def sized(literals: int | None = None, per_sort: int | None = None) -> Templates:
        """The default templates with ``literals`` per clause and ``per_sort`` quantified
        variables per sort (the CLI's ``--infer-literals``/``--infer-vars``)."""
        t = DEFAULT_TEMPLATES
        k = t.k if literals is None else literals
        n = t.per_sort if per_sort is None else per_sort
        return Templates(k=k, k_wide=min(t.k_wide, k), per_sort=n, total=max(t.total, n))


MAX_LITERALS = 6
MAX_VARS = 3
DEFAULT_TEMPLATES = Templates()


def no_vars(protocol: Protocol) -> str:
    return (
        f"protocol {protocol.name!r} declares no Vars: nothing to build invariants from "
        "(give its state variables as Var(...) in Protocol.vars, or prove with --strengthening)"
    )


def shapes(protocol: Protocol, t: Templates) -> list[tuple[str, ...]]:
    """Quantifier prefixes, smallest first: e.g. (Req,), (Req, Page), (Req, Req, Page)."""
    out = [
        tuple(s for s, n in zip(protocol.sorts, counts, strict=True) for _ in range(n))
        for counts in itertools.product(range(t.per_sort + 1), repeat=len(protocol.sorts))
        if sum(counts) <= t.total
    ]
    return sorted(out, key=lambda q: (len(q), q))


def atoms(protocol: Protocol, qvars: tuple[str, ...]) -> list[Atom]:
    """Every variable applied to quantified variables of its argument sorts."""
    return [
        Atom(v.name, args)
        for v in protocol.vars
        for args in itertools.product(*([i for i, s in enumerate(qvars) if s == a] for a in v.args))
    ]


def _domain(v: Var) -> list[Any]:
    return [False, True] if v.kind == BOOL else list(v.kind.values)  # type: ignore[union-attr]


def candidates(
    protocol: Protocol,
    concrete: Concrete,
    states: Iterable[Any],
    templates: Templates = DEFAULT_TEMPLATES,
) -> list[Clause]:
    """Minimal cubes no sampled state shows, as clauses (``states``: ``State.data``)."""
    if not protocol.vars:
        raise KvproofInputError(no_vars(protocol))
    flat = _flat(concrete, list(states))
    out: list[Clause] = []
    for qvars in shapes(protocol, templates):
        wide = len(set(qvars)) < len(qvars)
        k = min(templates.k, templates.k_wide) if wide else templates.k
        out += _shape_candidates(protocol, concrete, flat, qvars, k)
        if len(out) > templates.max_candidates:
            raise KvproofInputError(
                f"over {templates.max_candidates} candidate clauses at {len(qvars)} quantified "
                f"variables: lower --infer-literals (now {templates.k}) or --infer-vars "
                f"(now {templates.per_sort})",
            )
    return out


def _shape_candidates(
    protocol: Protocol,
    concrete: Concrete,
    flat: tuple[list[int], Any],
    qvars: tuple[str, ...],
    k: int,
) -> list[Clause]:
    found = atoms(protocol, qvars)
    if not found:
        return []
    doms = [_domain(protocol.var(a.var)) for a in found]
    matrix = _rows(concrete, flat, qvars, found)
    if matrix is None:
        return []
    sizes = [len(d) for d in doms]
    cache: dict[tuple[int, ...], Any] = {}
    columns = np.ascontiguousarray(matrix.T)  # one contiguous row per atom
    # The last codes computed per length: combinations come in lexicographic order, so
    # consecutive ones share their prefix (one array per length, not one per prefix).
    last: dict[int, tuple[tuple[int, ...], Any]] = {0: ((), np.zeros(len(matrix), np.int64))}

    def codes_of(slots: tuple[int, ...]) -> Any:
        """Each sample row's mixed-radix code over ``slots``."""
        slot_key, got = last.get(len(slots), ((-1,), None))
        if slot_key != slots:
            got = codes_of(slots[:-1]) * sizes[slots[-1]] + columns[slots[-1]]
            last[len(slots)] = (slots, got)
        return got

    def seen(slots: tuple[int, ...]) -> Any:
        """Which value combinations of ``slots`` the samples show: a boolean array over
        their mixed-radix codes."""
        got = cache.get(slots)
        if got is None:
            got = cache[slots] = np.zeros(math.prod(sizes[s] for s in slots), dtype=bool)
            got[codes_of(slots)] = True
        return got

    perms = _renamings(qvars)
    out: dict[tuple[Literal, ...], Clause] = {}
    every = set(range(len(qvars)))
    for j in range(1, k + 1):
        for slots in itertools.combinations(range(len(found)), j):
            if set().union(*(found[s].args for s in slots)) != every:
                continue
            unseen = np.flatnonzero(~seen(slots))
            if not len(unseen):
                continue
            # the unseen combinations' digits, one row each (mixed radix, last slot last)
            digits = np.stack(np.unravel_index(unseen, [sizes[s] for s in slots]), axis=1)
            minimal = np.ones(len(unseen), dtype=bool)  # every smaller cube is seen
            for i in range(j if j > 1 else 0):
                drop = slots[:i] + slots[i + 1 :]
                rest = tuple(np.delete(digits, i, axis=1).T)
                minimal &= seen(drop)[np.ravel_multi_index(rest, [sizes[s] for s in drop])]
            for values in digits[minimal].tolist():
                cube = tuple(
                    Literal(found[s], doms[s][v]) for s, v in zip(slots, values, strict=True)
                )
                key = _canonical(cube, perms)
                out.setdefault(key, Clause(qvars, key))
    return list(out.values())


def cell_codes(concrete: Concrete) -> tuple[list[int], list[dict[Any, int]]]:
    """A state as one int vector: per variable, where its cells start, and each value's
    code there (its index in the variable's domain)."""
    offsets, codes, n = [], [], 0
    for v in concrete.protocol.vars:
        offsets.append(n)
        n += len(concrete.inst.cells(v))
        codes.append({val: i for i, val in enumerate(_domain(v))})
    return offsets, codes


def _flat(concrete: Concrete, datas: list[Any]) -> tuple[list[int], Any]:
    """Every state as one int vector (``cell_codes``)."""
    offsets, codes = cell_codes(concrete)
    flat = np.array(
        [[codes[i][x] for i, row in enumerate(d) for x in row] for d in datas], dtype=np.int8
    )
    return offsets, flat


def _rows(
    concrete: Concrete,
    flat_states: tuple[list[int], Any],
    qvars: tuple[str, ...],
    found: list[Atom],
) -> Any:
    """Distinct atom valuations over every sample and assignment (an int matrix)."""
    inst = concrete.inst
    offsets, flat = flat_states
    envs = distinct_envs(inst.sizes, qvars)
    if not envs or not len(flat):
        return None
    blocks = []
    for env in envs:
        cols = [
            offsets[inst.var_index[a.var]] + inst.flat(a.var, tuple(env[i] for i in a.args))
            for a in found
        ]
        blocks.append(flat[:, cols])
    rows = np.ascontiguousarray(np.concatenate(blocks).astype(np.int8))
    keys = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()
    _, first = np.unique(keys, return_index=True)
    return rows[first].astype(np.int64)


def _renamings(qvars: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Permutations of variable indices that keep each variable's sort."""
    return [
        p
        for p in itertools.permutations(range(len(qvars)))
        if all(qvars[i] == qvars[p[i]] for i in range(len(qvars)))
    ]


def _canonical(cube: tuple[Literal, ...], perms: list[tuple[int, ...]]) -> tuple[Literal, ...]:
    def key(lit: Literal) -> tuple[Any, ...]:
        return (lit.atom.var, lit.atom.args, str(lit.value))

    renamed = (
        tuple(
            sorted(
                (
                    Literal(Atom(lit.atom.var, tuple(p[a] for a in lit.atom.args)), lit.value)
                    for lit in cube
                ),
                key=key,
            )
        )
        for p in perms
    )
    return min(renamed, key=lambda lits: tuple(map(key, lits)))


def distinct_envs(sizes: dict[str, int], qvars: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Every assignment of elements to ``qvars``, distinct within a sort."""
    return [
        e
        for e in itertools.product(*(range(sizes[s]) for s in qvars))
        if all(e[i] != e[j] for i in range(len(e)) for j in range(i) if qvars[i] == qvars[j])
    ]


def ground(inst: Instance, c: Clause) -> list[tuple[tuple[int, int, Any], ...]]:
    """Per assignment of ``c``'s quantified variables, its cube's cells: (variable index,
    flat cell index, value)."""
    return [
        tuple(
            (
                inst.var_index[lit.atom.var],
                inst.flat(lit.atom.var, tuple(env[a] for a in lit.atom.args)),
                lit.value,
            )
            for lit in c.cube
        )
        for env in distinct_envs(inst.sizes, c.qvars)
    ]


class Evaluator:
    """Clauses on concrete states of one instance (the Houdini loop's inner check)."""

    def __init__(self, concrete: Concrete) -> None:
        self.concrete, self.inst = concrete, concrete.inst
        self._cells: dict[Clause, list[tuple[tuple[int, int, Any], ...]]] = {}

    def holds(self, c: Clause, data: Any) -> bool:
        plan = self._cells.get(c)
        if plan is None:
            plan = self._cells[c] = ground(self.inst, c)
        return not any(all(data[i][j] == v for i, j, v in cube) for cube in plan)
