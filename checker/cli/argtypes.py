"""argparse types for numbers: a bad value is a usage error (exit 2, one line, the flag named);
and a run's options from the flags.

``type=positive_int`` makes argparse itself reject ``--depth 0`` as
``kvproof: error: argument --depth: must be an integer >= 1, got '0'``, before any work.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any

# Far beyond any sane depth, count or budget; keeps "huge numbers" from hanging a run.
MAX_INT = 10**9


def _ranged(convert: Callable[[str], Any], noun: str, ok: Callable[[Any], bool], bound: str) -> Any:
    """A type that reads a ``noun`` with ``convert`` and takes it when ``ok`` (``bound`` says
    which values are)."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
        return value

    return parse


def int_at_least(low: int, high: int = MAX_INT) -> Callable[[str], int]:
    bound = f"an integer {low}..{high}"
    return _ranged(lambda t: int(t, 10), "an integer", lambda v: low <= v <= high, bound)


def float_above(low: float, *, inclusive: bool = False) -> Callable[[str], float]:
    def ok(value: float) -> bool:
        return math.isfinite(value) and (value >= low if inclusive else value > low)

    rel = ">=" if inclusive else ">"
    return _ranged(float, "a number", ok, f"a number {rel} {low:g}")


positive_int = int_at_least(1)
positive_float = float_above(0.0)
nonnegative_float = float_above(0.0, inclusive=True)
port = int_at_least(1, 65535)


def same_names(options: Any, args: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """The fields of the dataclass ``options`` (or the keyword-only parameters of the run
    ``options``) that flags of the same names set (a repeatable flag's list as a tuple: the
    options are frozen), and ``given`` over them."""
    if dataclasses.is_dataclass(options):
        names = [f.name for f in dataclasses.fields(options)]
    else:
        params = inspect.signature(options).parameters.values()
        names = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    flags = {n: getattr(args, n) for n in names if n not in given}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in flags.items()} | given
