"""Invariants as readable clauses: the DSL's formulas printed instead of solved.

An invariant is a Python function over a context ``s`` (``model/lang/dsl.py``); run it with a
logic whose values are strings and it prints itself: ``∀ r, p: inflight(r, p) →
dphase(r) ∈ {transfer, draining}``. Switch-dependent parts (plain Python constants) fold
away, so the clause is the one the variant's protocol really checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.fold import fold, one_or

_LETTER = {"Req": "r", "Page": "p"}


class _Text(str):
    """A printed subformula; ``atom`` ones need no parentheses as operands."""

    atom: bool = False


def _atom(text: str) -> _Text:
    t = _Text(text)
    t.atom = True
    return t


def _show(x: Any) -> str:
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, _Text):
        return x if x.atom else f"({x})"
    return str(x)


class PrintLogic:
    """The DSL's logic with strings for terms (constants folded)."""

    def __init__(self) -> None:
        self.bound: dict[str, int] = {}

    def and_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=False, term=_text_term, join=one_or(_conj))

    def or_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=True, term=_text_term, join=_disj)

    def not_(self, x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        parts = _eq_parts(x)
        if parts is not None:
            return _atom(f"{parts[0]} ≠ {parts[1]}")
        if isinstance(x, _Text) and x.atom and " ∈ " in x:
            return _atom(x.replace(" ∈ ", " ∉ ", 1))
        return _atom(f"¬{_show(x)}")

    def implies(self, a: Any, b: Any) -> Any:
        if a is True:
            return b
        if a is False or b is True:
            return True
        return _Text(f"{_show(a)} → {_show(b)}")

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(c, bool):
            return a if c else b
        return _atom(f"(if {c} then {_show(a)} else {_show(b)})")

    def eq(self, a: Any, b: Any) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return a == b
        if b is True:
            return a
        if b is False:
            return self.not_(a)
        t = _atom(f"{a} = {b}")
        t.eq = (str(a), str(b))  # type: ignore[attr-defined]
        return t

    def _bind(self, sort: str) -> str:
        base = _LETTER.get(sort, sort[:1].lower())
        n = self.bound.get(base, 0) + 1
        self.bound[base] = n
        return base if n == 1 else f"{base}{n}"

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant("∀", sort, fn)

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self._quant("∃", sort, fn)

    def _quant(self, sym: str, sort: str, fn: Callable[[Any], Any]) -> Any:
        name = self._bind(sort)
        body = fn(_atom(name))
        if isinstance(body, bool):
            return body
        if body.startswith(sym + " ") and ": " in body:
            head, rest = body[2:].split(": ", 1)
            return _Text(f"{sym} {name}, {head}: {rest}")
        return _Text(f"{sym} {name}: {body}")


def _text_term(x: Any) -> Any | None:
    return None if isinstance(x, bool) else x


def _conj(*terms: Any) -> _Text:
    return _Text(" ∧ ".join(_show(x) for x in terms))


def _disj(terms: list[Any]) -> Any:
    """Equalities of one term read as a set (``x ∈ {a, b}``), even a single one."""
    eqs = [_eq_parts(x) for x in terms]
    if all(e is not None for e in eqs) and len({e[0] for e in eqs}) == 1:  # type: ignore[index]
        values = ", ".join(e[1] for e in eqs)  # type: ignore[index]
        return _atom(f"{eqs[0][0]} ∈ {{{values}}}")  # type: ignore[index]
    return terms[0] if len(terms) == 1 else _Text(" ∨ ".join(_show(x) for x in terms))


def _eq_parts(x: Any) -> tuple[str, str] | None:
    return getattr(x, "eq", None)


class _Reads:
    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        return _atom(f"{var}({', '.join(map(str, args))})" if args else var)


def clause(inv: Invariant) -> str:
    """``inv`` as one line of logic."""
    out = inv.body(Ctx(PrintLogic(), _Reads()))
    return _show(out) if not isinstance(out, _Text) or out.atom else str(out)


def clauses(protocol: Protocol) -> list[tuple[Invariant, str]]:
    """Every safety invariant, then every strengthening conjunct, with its clause."""
    return [(inv, clause(inv)) for inv in (*protocol.safety, *protocol.strengthening)]
