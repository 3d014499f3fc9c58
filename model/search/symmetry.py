"""Symmetry reduction for explicit-state search: one representative per orbit.

A protocol's symmetric sorts (``Protocol.symmetric``: requests and pages for the handoff)
have interchangeable elements: the initial states, the rules and the invariants are the same
under any permutation of them. Breadth-first search may then store one state per orbit (the
set of states a permutation maps onto each other) without changing any verdict or any
shortest distance (Ip & Dill, "Better verification through symmetry", 1996; SPIN's and
TLC's symmetry sets).

The representative is exact (two states get the same one iff a permutation maps one onto
the other), so no orbit is visited twice and none is lost:

- **one sort** (the handoff's default, pages): every variable has at most one argument of
  the sort, so sorting the elements by their column of values (every cell that names the
  element) is a canonical form: equal columns are interchangeable, different ones ordered;
- **two sorts** (requests and pages): the representative is the least, over the request
  orders that sort requests by a signature blind to page order (the request's own cells
  and the sorted multiset of its per-page cells), of the page-canonical form of the state
  with requests in that order. Requests with different signatures have one order, so
  only ties (typically requests not yet arrived) cost more than one page sort.

Both are generated Python (``exec``'d once per instance), as ``model/lang/compiled.py``
generates successors: states stay the interpreter's ``State.data`` tuples.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from kvproof.model.lang.concrete import Concrete

Canon = Callable[[Any], Any]


def canonicaliser(concrete: Concrete, sorts: tuple[str, ...]) -> Canon:
    """The function mapping ``State.data`` to its orbit's representative (``sorts``: the
    symmetric sorts to quotient by, at most two, each with more than one element)."""
    if not sorts:
        return _identity
    if len(sorts) == 1:
        return _one_sort(concrete, sorts[0])
    if len(sorts) == 2:
        return _two_sorts(concrete, sorts)
    raise ValueError("symmetry reduction supports at most two sorts")


def _identity(d: Any) -> Any:
    return d


def _exec(src: list[str], name: str, tag: str, env: dict[str, Any] | None = None) -> Any:
    scope: dict[str, Any] = dict(env or {})
    exec(compile("\n".join(src), f"<kvproof:{tag}>", "exec"), scope)
    return scope[name]


class _Sort:
    """Where one sort's elements sit in ``State.data``: per variable with an argument of
    the sort, each element's cells (flat indices), and generated code over them."""

    def __init__(self, concrete: Concrete, sort: str) -> None:
        self.concrete = concrete
        self.sort = sort
        inst = concrete.inst
        self.n = inst.sizes[sort]
        self.columns: list[tuple[int, list[list[int]]]] = []
        for i, v in enumerate(concrete.protocol.vars):
            positions = [k for k, s in enumerate(v.args) if s == sort]
            if not positions:
                continue
            if len(positions) > 1:
                raise ValueError(f"{v.name} has two {sort} arguments: no exact canonical form")
            (k,) = positions
            cells = inst.cells(v)
            per = [[j for j, args in enumerate(cells) if args[k] == e] for e in range(self.n)]
            self.columns.append((i, per))
        self._movers: dict[tuple[int, ...], Callable[[Any], Any]] = {}

    def key_parts(self) -> list[list[str]]:
        """Per element, code reading its cells (the same order for every element): slices
        where the sort's argument comes first or last (C speed), single reads otherwise."""
        protocol = self.concrete.protocol
        parts: list[list[str]] = [[] for _ in range(self.n)]
        per_var = dict(self.columns)
        n = self.n
        for i, v in enumerate(protocol.vars):
            if self.sort not in v.args:
                continue
            k = v.args.index(self.sort)
            width = len(self.concrete.cells[v.name]) // n
            for e in range(n):
                if len(v.args) == 1:
                    parts[e].append(f"d[{i}][{e}]")
                elif k == len(v.args) - 1:
                    parts[e].append(f"d[{i}][{e}::{n}]")
                elif k == 0:
                    parts[e].append(f"d[{i}][{e * width}:{(e + 1) * width}]")
                else:
                    cells = per_var[i][e]
                    parts[e].append("(" + "".join(f"d[{i}][{j}], " for j in cells) + ")")
        return parts

    def mover(self, perm: tuple[int, ...]) -> Callable[[Any], Any]:
        """New element ``e`` takes old element ``perm[e]``'s cells (generated, cached)."""
        move = self._movers.get(perm)
        if move is not None:
            return move
        protocol = self.concrete.protocol
        getters = {}
        for i, per in self.columns:
            index = list(range(len(self.concrete.cells[protocol.vars[i].name])))
            for e in range(self.n):
                for j_new, j_old in zip(per[e], per[perm[e]], strict=True):
                    index[j_new] = j_old
            getters[i] = index
        parts = []
        for i in range(len(protocol.vars)):
            if i in getters:
                parts.append("(" + "".join(f"r{i}[{j}], " for j in getters[i]) + ")")
            else:
                parts.append(f"d[{i}]")
        unpack = [f"    r{i} = d[{i}]" for i in getters]
        src = ["def move(d):", *unpack, f"    return ({', '.join(parts)},)"]
        move = self._movers[perm] = _exec(src, "move", f"move:{self.sort}")
        return move


def _one_sort(concrete: Concrete, sort: str) -> Canon:
    """Sort the elements by their columns (exact: see the module docstring)."""
    s = _Sort(concrete, sort)
    parts = s.key_parts()
    src = ["def key(d):", f"    return [{', '.join('(' + ', '.join(p) + ',)' for p in parts)}]"]
    keys = _exec(src, "key", f"key:{sort}")
    identity = tuple(range(s.n))
    mover = s.mover

    def canon(d: Any) -> Any:
        k = keys(d)
        perm = tuple(sorted(identity, key=k.__getitem__))
        if perm == identity:
            return d
        return mover(perm)(d)

    # The key reads only the sort's rows: a successor that left them equal to those of a
    # canonical parent is canonical already (most steps touch few rows).
    same = " and ".join(f"d[{i}] == p[{i}]" for i, _ in s.columns) or "True"
    canon.same = _exec([f"def same(p, d):\n    return {same}"], "same", "same")  # type: ignore[attr-defined]
    return canon


def _two_sorts(concrete: Concrete, sorts: tuple[str, ...]) -> Canon:
    """Least page-canonical form over the request orders that sort request signatures."""
    outer_sort, inner_sort = sorts
    protocol = concrete.protocol
    # The outer sort should be the one whose signatures differ most often; the code is
    # exact either way. Both sorts' variables must take at most one argument of each.
    outer = _Sort(concrete, outer_sort)
    inner = _Sort(concrete, inner_sort)
    inner_canon = _one_sort(concrete, inner_sort)
    n, m = outer.n, inner.n
    # Signature of outer element e: its cells in variables without an inner argument and,
    # per variable over both sorts, how many of its (e, q) cells are set: blind to inner
    # order, moved by outer permutations. ``zip`` over the one-argument rows builds every
    # element's tuple at C speed; ties are enumerated, so a weak signature costs time only.
    own: list[str] = []
    counts: list[str] = []
    for i, v in enumerate(protocol.vars):
        has_o, has_i = outer_sort in v.args, inner_sort in v.args
        if has_o and len(v.args) > (2 if has_i else 1):
            raise ValueError(f"{v.name}: two-sort symmetry needs at most one other argument")
        if not has_o:
            continue
        if not has_i:
            own.append(f"d[{i}]")
            continue
        ko = v.args.index(outer_sort)
        rows = [
            f"d[{i}][{e * m}:{(e + 1) * m}]" if ko == 0 else f"d[{i}][{e}::{n}]" for e in range(n)
        ]
        counts.append("(" + "".join(f"{r}.count({v.default!r}), " for r in rows) + ")")
    signature = _exec(
        ["def signature(d):", f"    return list(zip({', '.join(own)}))"],
        "signature",
        "signature",
    )
    identity = tuple(range(n))
    mover = outer.mover

    # (order, which neighbours in it tie) -> the moves of every order that sorts the
    # signatures: computed once per pattern, so a state costs a sort and a lookup.
    plans: dict[tuple[tuple[int, ...], tuple[bool, ...]], list[Callable[[Any], Any] | None]] = {}

    def plan(order: tuple[int, ...], ties: tuple[bool, ...]) -> list[Callable[[Any], Any] | None]:
        groups: list[list[int]] = [[order[0]]]
        for e, tied in zip(order[1:], ties, strict=True):
            if tied:
                groups[-1].append(e)
            else:
                groups.append([e])
        moves: list[Callable[[Any], Any] | None] = []
        for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
            perm = tuple(e for g in choice for e in g)
            moves.append(None if perm == identity else mover(perm))
        plans[order, ties] = moves
        return moves

    def canon(d: Any) -> Any:
        sig = signature(d)
        order = tuple(sorted(identity, key=sig.__getitem__))
        if len(set(sig)) == n:  # no ties: one order
            return inner_canon(d if order == identity else mover(order)(d))
        ties = tuple(sig[a] == sig[b] for a, b in itertools.pairwise(order))
        moves = plans.get((order, ties)) or plan(order, ties)
        best = None
        for move in moves:
            cand = inner_canon(d if move is None else move(d))
            if best is None or cand < best:
                best = cand
        return best

    canon.same = _never  # type: ignore[attr-defined]  # every step may reorder requests
    return canon


def _never(p: Any, d: Any) -> bool:
    return False
