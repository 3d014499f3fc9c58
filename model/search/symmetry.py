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
  orders that sort requests by a signature blind to page order (the request's own
  cells), of the page-canonical form of the state with requests in that order.
  Requests with different signatures have one order, so only ties (typically requests
  not yet arrived) cost more than one page sort.

Both are generated Python (``exec``'d once per instance), as ``model/lang/compiled.py``
generates successors: states stay the interpreter's ``State.data`` tuples.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
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


_identity.after = lambda p, d: d  # type: ignore[attr-defined]  # no sort, no reordering


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

    def key_code(self, before: dict[int, list[int]] | None = None) -> str:
        """Code for the list of element keys: per element, its cells (the same order for
        every element), read by slices where the sort's argument comes first or last (C
        speed), single reads otherwise. ``before``: read the state another sort's move
        would give (new cell ``j`` of variable ``i`` is old ``before[i][j]``) without
        building it."""
        protocol = self.concrete.protocol
        parts: list[list[str]] = [[] for _ in range(self.n)]
        per_var = dict(self.columns)
        n = self.n
        for i, v in enumerate(protocol.vars):
            if self.sort not in v.args:
                continue
            k = v.args.index(self.sort)
            width = len(self.concrete.cells[v.name]) // n
            moved = (before or {}).get(i)
            for e in range(n):
                if moved is not None:
                    reads = [f"d[{i}][{moved[j]}]" for j in per_var[i][e]]
                    parts[e].append(reads[0] if len(v.args) == 1 else f"({', '.join(reads)},)")
                elif len(v.args) == 1:
                    parts[e].append(f"d[{i}][{e}]")
                elif k == len(v.args) - 1:
                    parts[e].append(f"d[{i}][{e}::{n}]")
                elif k == 0:
                    parts[e].append(f"d[{i}][{e * width}:{(e + 1) * width}]")
                else:
                    cells = per_var[i][e]
                    parts[e].append("(" + "".join(f"d[{i}][{j}], " for j in cells) + ")")
        return "[" + ", ".join("(" + ", ".join(p) + ",)" for p in parts) + "]"

    def keys(self, before: dict[int, list[int]] | None = None) -> Callable[[Any], Any]:
        """The generated function from ``State.data`` to the list of element keys."""
        src = ["def key(d):", f"    return {self.key_code(before)}"]
        return _exec(src, "key", f"key:{self.sort}")

    def index(self, perm: tuple[int, ...]) -> dict[int, list[int]]:
        """Per variable with an argument of the sort, the old cell each new cell reads when
        new element ``e`` takes old element ``perm[e]``'s cells."""
        protocol = self.concrete.protocol
        getters = {}
        for i, per in self.columns:
            index = list(range(len(self.concrete.cells[protocol.vars[i].name])))
            for e in range(self.n):
                for j_new, j_old in zip(per[e], per[perm[e]], strict=True):
                    index[j_new] = j_old
            getters[i] = index
        return getters

    def sorted_code(self, name: str) -> list[str]:
        """Code for ``name(d)``: ``d`` with its elements sorted by key (``d`` itself when
        they are in order already, the common case: chained comparisons)."""
        in_order = " <= ".join(f"k[{e}]" for e in range(self.n))
        return [
            f"def {name}(d):",
            f"    k = {self.key_code()}",
            f"    return d if {in_order} else S(d, k)",
        ]

    def sort_by(self, d: Any, k: list[Any]) -> Any:
        """``d`` with its elements in the order of their keys ``k``."""
        return self.mover(tuple(sorted(range(self.n), key=k.__getitem__)))(d)

    def mover(self, perm: tuple[int, ...]) -> Callable[[Any], Any]:
        """New element ``e`` takes old element ``perm[e]``'s cells (generated, cached)."""
        move = self._movers.get(perm)
        if move is None:
            move = self._movers[perm] = _move(self.concrete, self.index(perm), self.sort)
        return move


def _move(concrete: Concrete, getters: dict[int, list[int]], tag: str) -> Callable[[Any], Any]:
    """``State.data`` with new cell ``j`` of variable ``i`` read from old ``getters[i][j]``."""
    parts = []
    for i in range(len(concrete.protocol.vars)):
        if i in getters:
            parts.append("(" + "".join(f"r{i}[{j}], " for j in getters[i]) + ")")
        else:
            parts.append(f"d[{i}]")
    unpack = [f"    r{i} = d[{i}]" for i in getters]
    src = ["def move(d):", *unpack, f"    return ({', '.join(parts)},)"]
    return _exec(src, "move", f"move:{tag}")


def _one_sort(concrete: Concrete, sort: str) -> Canon:
    """Sort the elements by their columns (exact: see the module docstring)."""
    s = _Sort(concrete, sort)
    # The key reads only the sort's rows: a successor that left them equal to those of a
    # canonical parent is canonical already (most steps touch few rows).
    src = [
        *s.sorted_code("canon"),
        "def after(p, d):",
        f"    return d if {_same(i for i, _ in s.columns)} else canon(d)",
    ]
    canon = _exec(src, "canon", f"canon:{sort}", {"S": s.sort_by})
    canon.after = canon.__globals__["after"]
    return canon


def _same(rows: Iterable[int]) -> str:
    """Code: whether states ``p`` and ``d`` agree on ``rows``."""
    return " and ".join(f"d[{i}] == p[{i}]" for i in rows) or "True"


def _two_sorts(concrete: Concrete, sorts: tuple[str, ...]) -> Canon:
    """Least page-canonical form over the request orders that sort request signatures."""
    outer_sort, inner_sort = sorts
    protocol = concrete.protocol
    # The outer sort should be the one whose signatures differ most often; the code is
    # exact either way. Both sorts' variables must take at most one argument of each.
    outer = _Sort(concrete, outer_sort)
    inner = _Sort(concrete, inner_sort)
    n, m = outer.n, inner.n
    # Signature of outer element e: its cells in variables without an inner argument:
    # blind to inner order, moved by outer permutations. ``zip`` over those rows builds
    # every element's tuple at C speed; ties are enumerated, so a weak signature costs
    # time only.
    own_rows: list[int] = []
    for i, v in enumerate(protocol.vars):
        has_o, has_i = outer_sort in v.args, inner_sort in v.args
        if has_o and len(v.args) > (2 if has_i else 1):
            raise ValueError(f"{v.name}: two-sort symmetry needs at most one other argument")
        if has_o and not has_i:
            own_rows.append(i)
    identity = tuple(range(n))
    inner_identity = tuple(range(m))

    # Per outer order, the inner keys of the state in that order, read from the state as
    # it is; per (outer order, inner order), one move doing both: a state costs one new
    # tuple at most, not one per sort (issue #30: the witness search's canonical forms).
    keys: dict[tuple[int, ...], Callable[[Any], Any]] = {identity: inner.keys()}
    moves: dict[tuple[tuple[int, ...], tuple[int, ...]], Callable[[Any], Any]] = {}

    def place(d: Any, order: tuple[int, ...]) -> Any:
        """The inner-canonical form of ``d`` with outer element ``e`` taking ``order[e]``'s
        cells (``inner_canon(outer.mover(order)(d))``, in one step)."""
        key = keys.get(order)
        if key is None:
            key = keys[order] = inner.keys(outer.index(order))
        k = key(d)
        perm = tuple(sorted(inner_identity, key=k.__getitem__))
        if order == identity and perm == inner_identity:
            return d
        move = moves.get((order, perm))
        if move is None:
            move = moves[order, perm] = _move(concrete, _then(outer, inner, order, perm), "both")
        return move(d)

    # (order, which neighbours in it tie) -> every order that sorts the signatures:
    # computed once per pattern, so a state costs a sort and a lookup.
    plans: dict[tuple[tuple[int, ...], tuple[bool, ...]], list[tuple[int, ...]]] = {}

    def plan(order: tuple[int, ...], ties: tuple[bool, ...]) -> list[tuple[int, ...]]:
        groups: list[list[int]] = [[order[0]]]
        for e, tied in zip(order[1:], ties, strict=True):
            if tied:
                groups[-1].append(e)
            else:
                groups.append([e])
        orders = [
            tuple(e for g in choice for e in g)
            for choice in itertools.product(*(itertools.permutations(g) for g in groups))
        ]
        plans[order, ties] = orders
        return orders

    def general(d: Any, sig: list[Any]) -> Any:
        order = tuple(sorted(identity, key=sig.__getitem__))
        if len(set(sig)) == n:  # no ties: one order
            return place(d, order)
        ties = tuple(sig[a] == sig[b] for a, b in itertools.pairwise(order))
        return min(place(d, o) for o in plans.get((order, ties)) or plan(order, ties))

    # Generated: most states have distinct signatures already in order and inner keys in
    # order (``place(d, identity)`` returns ``d``); that case is two chained comparisons,
    # the rest goes to ``general``. ``after`` takes a successor of a representative
    # ``p`` (signatures and inner keys sorted) and skips what its step could not change:
    # with ``p``'s signature rows and no ties its outer order is the identity; with
    # ``p``'s inner rows and signatures in order it is a representative already (its
    # inner keys are ``p``'s). Most steps touch one kind of row only.
    sig = f"list(zip({', '.join(f'd[{i}]' for i in own_rows)}))"
    rising = " < ".join(f"s[{e}]" for e in range(n))
    src = [
        *inner.sorted_code("inner"),
        "def canon(d):",
        f"    s = {sig}",
        f"    return inner(d) if {rising} else G(d, s)",
        "def after(p, d):",
        f"    if {_same(own_rows)}:",
        "        if L[0] is not p:",
        f"            s = {sig.replace('d[', 'p[')}",
        f"            L[0], L[1] = p, {rising}",
        "        return inner(d) if L[1] else canon(d)",
        f"    if {_same(i for i, _ in inner.columns)}:",
        f"        s = {sig}",
        f"        return d if {rising} else G(d, s)",
        "    return canon(d)",
    ]
    canon = _exec(src, "canon", "canon:both", {"S": inner.sort_by, "G": general, "L": [None, 0]})
    canon.after = canon.__globals__["after"]
    return canon


def _then(
    first: _Sort, second: _Sort, perm1: tuple[int, ...], perm2: tuple[int, ...]
) -> dict[int, list[int]]:
    """The reads of ``first``'s move by ``perm1`` followed by ``second``'s by ``perm2``."""
    a, b = first.index(perm1), second.index(perm2)
    out = dict(a)
    for i, rb in b.items():
        ra = a.get(i)
        out[i] = rb if ra is None else [ra[j] for j in rb]
    return out
