"""Names a user types (variants, invariants, assumptions, switches): a typo gets the nearest
known name, not the whole list.

``kvproof check sglang-0.5.19`` answers "did you mean 'sglang-0.5.19-pd'?". Only ``difflib``
is imported: the CLI checks names before it loads Z3 or torch, so a typo costs nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from kvproof.spec.errors import KvproofInputError


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


def require_known(name: str, known: Sequence[str], what: str, where: str, shown: str = "") -> None:
    """The one "unknown ``what``" error (a suggestion, then every known name in the order
    given) unless ``name`` is known; ``shown`` is how the error quotes it (default: as typed)."""
    if name not in known:
        raise KvproofInputError(
            f"unknown {what} {shown or repr(name)}{did_you_mean(name, known)}"
            f" (known: {', '.join(known)})",
            where,
        )


def require_assumed(variant: str, assume: Sequence[str], dropped: Iterable[str]) -> None:
    """``--without`` names only assumptions the variant lists in ``[assume]``."""
    for name in dropped:
        if name not in assume:
            raise KvproofInputError(
                f"{variant} does not assume {name!r}{did_you_mean(name, assume)} "
                f"(it assumes: {', '.join(assume) or 'none'})",
                "--without",
            )
