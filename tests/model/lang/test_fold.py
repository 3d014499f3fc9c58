"""One and/or folding for every logic (``model/lang/fold.py``): the Z3, tracing and printing
logics agree with Python on every mix of constants, and keep terms only where Python could
not decide."""

from __future__ import annotations

import itertools

import pytest
import z3

from kvproof.checker.report.clauses import PrintLogic
from kvproof.model.lang.compiled import _SymLogic
from kvproof.model.lang.fold import fold, one_or
from kvproof.model.lang.logic import Z3Logic

MIXES = [xs for n in range(4) for xs in itertools.product([True, False, "t"], repeat=n)]


def _logics() -> list[tuple[str, object, object]]:
    sym = _SymLogic({})
    return [
        ("z3", Z3Logic({}, ()), z3.Bool("t")),
        ("sym", sym, sym.node("cell", ("t", 0), True)),
        ("print", PrintLogic(), "t"),
    ]


@pytest.mark.parametrize("op", ["and_", "or_"])
@pytest.mark.parametrize("xs", MIXES, ids=str)
def test_constants_fold_as_python_does(op: str, xs: tuple[object, ...]) -> None:
    consts = [x for x in xs if isinstance(x, bool)]
    python = all if op == "and_" else any
    decided = (False in consts) if op == "and_" else (True in consts)
    for name, logic, term in _logics():
        got = getattr(logic, op)(*(term if x == "t" else x for x in xs))
        if decided or "t" not in xs:
            assert got is python(consts), name
        else:
            assert not isinstance(got, bool), name  # the term stays: Python cannot decide


def test_one_term_is_itself_and_several_join() -> None:
    assert fold([True, "a"], absorbing=False, term=_str, join=one_or(_both)) == "a"
    assert fold(["a", "b"], absorbing=False, term=_str, join=one_or(_both)) == "a&b"
    assert fold([], absorbing=True, term=_str, join=one_or(_both)) is False


def _str(x: object) -> object | None:
    return None if isinstance(x, bool) else x


def _both(*xs: object) -> str:
    return "&".join(map(str, xs))
