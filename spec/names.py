"""Names a user types (variants, invariants, assumptions, switches): a typo gets the nearest
known name, not the whole list.

``kvproof check sglang-0.5.19`` answers "did you mean 'sglang-0.5.19-pd'?". Only ``difflib``
is imported: the CLI checks names before it loads Z3 or torch, so a typo costs nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` known names close to ``name``, best first; a prefix counts as close."""
    names = list(dict.fromkeys(known))
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    # "sglang-0.5.19" is a prefix of "sglang-0.5.19-pd": difflib's ratio may rank a sibling
    # release above it, so names that extend what was typed come first.
    longer = sorted((k for k in names if k.startswith(name) and name), key=len)
    return list(dict.fromkeys(longer + close))[:n]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    best = nearest(name, known)
    if not best:
        return ""
    return "; did you mean " + " or ".join(f"'{b}'" for b in best) + "?"
