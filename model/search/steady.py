"""Z3's answers as a function of the question alone, not of Python's garbage collector.

Z3 numbers its terms and reuses the numbers of terms Python frees; which of several
equally short counterexamples a solver returns depends on those numbers. Python frees
cyclic garbage (which may hold Z3 terms) whenever its collector happens to run, i.e. after
a count of allocations anywhere in the program: one more object built before a check
once turned a variant's pinned counterexample into another one. A search runs with the
collector held (after one full collection), so only its own calls decide its answer.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def steady(search: Callable[P, R]) -> Callable[P, R]:
    """``search`` run with the collector held (``bmc``, ``prove``)."""

    @functools.wraps(search)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        was = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            return search(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return run
