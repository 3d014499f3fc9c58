"""argparse types for numbers: a bad value is a usage error (exit 2, one line, the flag named);
and a run's options from the flags.

``type=positive_int`` makes argparse itself reject ``--depth 0`` as
``kvproof: error: argument --depth: must be an integer >= 1, got '0'``, before any work.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from typing import Any

# Far beyond any sane depth, count or budget; keeps "huge numbers" from hanging a run.
MAX_INT = 10**9


def int_at_least(low: int, high: int = MAX_INT) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer {low}..{high}, got {text!r}")
        return value

    parse.__name__ = f"int>={low}"
    return parse


def float_above(low: float, *, inclusive: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        ok = value >= low if inclusive else value > low
        if not math.isfinite(value) or not ok:
            rel = ">=" if inclusive else ">"
            raise argparse.ArgumentTypeError(f"must be a number {rel} {low:g}, got {text!r}")
        return value

    parse.__name__ = f"float>{low}"
    return parse


positive_int = int_at_least(1)
positive_float = float_above(0.0)
nonnegative_float = float_above(0.0, inclusive=True)
port = int_at_least(1, 65535)
seed = int_at_least(0, 2**63 - 1)


def same_names(options: Any, args: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """The fields of the dataclass ``options`` that flags of the same names set (a repeatable
    flag's list as a tuple: the options are frozen), and ``given`` over them."""
    names = [f.name for f in dataclasses.fields(options) if f.name not in given]
    flags = {n: getattr(args, n) for n in names}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in flags.items()} | given
