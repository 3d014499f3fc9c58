"""And/or over a mix of Python constants and terms: one folding for every logic.

Each interpreter of the DSL (``PyLogic``, ``Z3Logic`` in ``logic.py``, the tracing logic in
``compiled.py``, the printing one in ``checker/render/prove_html.py``) keeps Python constants
(switch-dependent parts of a formula) out of its terms the same way: a constant equal to
the absorbing value decides the whole (``False`` for and, ``True`` for or), the other one
drops out, no terms left is the neutral value. Only what a term is and how terms join
differ, so those are the two arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def fold(
    xs: Iterable[Any],
    *,
    absorbing: bool,
    term: Callable[[Any], Any | None],
    join: Callable[[list[Any]], Any],
) -> Any:
    """And (``absorbing=False``) or or (``absorbing=True``) of ``xs``. ``term(x)`` is ``x``
    as a term, or None when ``x`` is a Python constant (then its truth value counts);
    ``join(terms)`` joins one or more terms."""
    terms = []
    for x in xs:
        t = term(x)
        if t is None:
            if bool(x) is absorbing:
                return absorbing
            continue
        terms.append(t)
    return join(terms) if terms else not absorbing


def one_or(make: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    """A ``join`` that leaves a single term alone and applies ``make`` to several."""
    return lambda terms: terms[0] if len(terms) == 1 else make(*terms)
