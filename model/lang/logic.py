"""Logic backends: plain Python values, or Z3 terms with Python-level simplification.

The Z3 backend folds Python constants as it builds terms (``and_(False, x)`` is ``False``,
``ite(True, a, b)`` is ``a``), so that evaluating an action instance with concrete
arguments over a symbolic state produces small terms and unchanged cells stay the very
same objects (the unroller relies on ``is`` to see that a cell did not change).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import z3

from kvproof.model.lang.dsl import Enum
from kvproof.model.lang.fold import fold, one_or


@dataclass(frozen=True)
class EnumIte:
    """``ite(c, a, b)`` over enum literals whose sort is not known yet (lifted later)."""

    c: Any
    a: Any
    b: Any


class PyLogic:
    """Concrete evaluation: sort elements are ints ``0..n-1``, values are Python values."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def and_(self, *xs: Any) -> bool:
        return all(xs)

    def or_(self, *xs: Any) -> bool:
        return any(xs)

    def not_(self, x: Any) -> bool:
        return not x

    def implies(self, a: Any, b: Any) -> bool:
        return (not a) or bool(b)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def eq(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        return all(fn(i) for i in range(self.sizes[sort]))

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        return any(fn(i) for i in range(self.sizes[sort]))


class Z3Logic:
    """Z3 terms. ``domains[sort]`` is an int (finite: quantifiers expand) or a Z3 sort
    (unbounded: real quantifiers over an uninterpreted sort)."""

    def __init__(
        self,
        domains: dict[str, int | z3.SortRef],
        enums: Iterable[Enum],
        enum_as_bv: bool = False,
    ) -> None:
        self.domains = domains
        self.enum_sorts: dict[str, z3.SortRef] = {}
        self.enum_consts: dict[str, dict[str, z3.ExprRef]] = {}
        self._by_sort: dict[str, dict[str, z3.ExprRef]] = {}
        self._names_by_sort: dict[str, tuple[str, ...]] = {}
        self._fresh = itertools.count()
        width = 0
        for e in enums:
            if enum_as_bv:
                # Bit-vectors keep bounded problems in QF_FD (Z3's finite-domain SAT
                # solver, much faster than datatypes here). Each enum gets its own
                # width so that a sort alone says which enum a term belongs to.
                width = max(max(1, (len(e.values) - 1).bit_length()), width + 1)
                sort = z3.BitVecSort(width)
                consts = [z3.BitVecVal(i, width) for i in range(len(e.values))]
            else:
                sort, consts = _enum_sort(e)
            self.enum_sorts[e.name] = sort
            table = dict(zip(e.values, consts, strict=True))
            self.enum_consts[e.name] = table
            self._by_sort[_sort_key(sort)] = table
            self._names_by_sort[_sort_key(sort)] = e.values

    # -- helpers -------------------------------------------------------------------------
    def sort_of(self, kind: str | Enum) -> z3.SortRef:
        return self.enum_sorts[kind.name] if isinstance(kind, Enum) else z3.BoolSort()

    def lift(self, value: Any, like: Any = None, sort: z3.SortRef | None = None) -> Any:
        """A Python constant as a Z3 term (``like`` or ``sort`` give an enum's sort)."""
        if isinstance(value, z3.ExprRef):
            return value
        if isinstance(value, bool):
            return z3.BoolVal(value)
        if sort is None and isinstance(like, z3.ExprRef):
            sort = like.sort()
        if sort is None:
            raise TypeError(f"cannot lift {value!r} without a sort")
        if isinstance(value, EnumIte):
            return z3.If(value.c, self.lift(value.a, sort=sort), self.lift(value.b, sort=sort))
        if isinstance(value, str):
            return self._by_sort[_sort_key(sort)][value]
        raise TypeError(f"cannot lift {value!r}")

    def enum_value(self, expr: z3.ExprRef) -> str:
        """The name of an enum constant (from a model evaluation)."""
        if z3.is_bv_value(expr):
            return self._names_by_sort[_sort_key(expr.sort())][int(expr.as_long())]
        return str(expr)

    # -- logic ---------------------------------------------------------------------------
    def and_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=False, term=_z3_term, join=one_or(z3.And))

    def or_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=True, term=_z3_term, join=one_or(z3.Or))

    def not_(self, x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        return z3.Not(x)

    def implies(self, a: Any, b: Any) -> Any:
        return self.or_(self.not_(a), b)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if c is True:
            return a
        if c is False:
            return b
        if a is b:
            return a
        if a is True and b is False:
            return c
        if a is False and b is True:
            return self.not_(c)
        if isinstance(a, bool) and not isinstance(b, str):
            if a:
                return self.or_(c, b)
            return self.and_(self.not_(c), b)
        if isinstance(b, bool) and not isinstance(a, str):
            if b:
                return self.or_(self.not_(c), a)
            return self.and_(c, a)
        if not isinstance(a, z3.ExprRef) and not isinstance(b, z3.ExprRef):
            if a == b:
                return a
            return EnumIte(c, a, b)
        like = a if isinstance(a, z3.ExprRef) else b
        return z3.If(c, self.lift(a, like), self.lift(b, like))

    def eq(self, a: Any, b: Any) -> Any:
        if a is b:
            return True
        if isinstance(a, EnumIte) and not isinstance(b, z3.ExprRef):
            return self.ite(a.c, self.eq(a.a, b), self.eq(a.b, b))
        if isinstance(b, EnumIte) and not isinstance(a, z3.ExprRef):
            return self.ite(b.c, self.eq(a, b.a), self.eq(a, b.b))
        a_py = not isinstance(a, z3.ExprRef)
        b_py = not isinstance(b, z3.ExprRef)
        if a_py and b_py:
            return a == b
        if isinstance(a, bool) or isinstance(b, bool):
            sym, const = (b, a) if a_py else (a, b)
            return sym if const else z3.Not(sym)
        if a_py:
            a = self.lift(a, b)
        if b_py:
            b = self.lift(b, a)
        if a.eq(b):
            return True
        return a == b

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        dom = self.domains[sort]
        if isinstance(dom, int):
            return self.and_(*(fn(i) for i in range(dom)))
        x = z3.Const(f"{sort}{next(self._fresh)}", dom)
        body = fn(x)
        if isinstance(body, bool):
            return body
        return z3.ForAll([x], body)

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        dom = self.domains[sort]
        if isinstance(dom, int):
            return self.or_(*(fn(i) for i in range(dom)))
        x = z3.Const(f"{sort}{next(self._fresh)}", dom)
        body = fn(x)
        if isinstance(body, bool):
            return body
        return z3.Exists([x], body)


def _z3_term(x: Any) -> Any | None:
    """A Python bool is a constant to fold; anything else is a Z3 term."""
    return None if isinstance(x, bool) else x


def _sort_key(sort: z3.SortRef) -> str:
    """Bit-vector sorts are all named 'bv'; their width tells them apart."""
    if isinstance(sort, z3.BitVecSortRef):
        return f"bv{sort.size()}"
    return str(sort.name())


_ENUM_SORTS: dict[tuple[str, tuple[str, ...]], tuple[z3.SortRef, list[z3.ExprRef]]] = {}


def _enum_sort(e: Enum) -> tuple[z3.SortRef, list[z3.ExprRef]]:
    """Z3 refuses to declare an enumeration sort twice in one context: declare once."""
    key = (e.name, e.values)
    if key not in _ENUM_SORTS:
        _ENUM_SORTS[key] = z3.EnumSort(e.name, list(e.values))
    return _ENUM_SORTS[key]
