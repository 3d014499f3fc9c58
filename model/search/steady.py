"""Z3's answers as a function of the question alone, not of Python's garbage collector.

Z3 numbers its terms and reuses the numbers of terms Python frees; which of several
equally short counterexamples a solver returns depends on those numbers. Python frees
cyclic garbage (which may hold Z3 terms) whenever its collector happens to run, i.e. after
a count of allocations anywhere in the program: one more object built before a check
once turned a variant's pinned counterexample into another one. A search runs with the
collector held (after one full collection), so only its own calls decide its answer.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def steady_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
