"""One small adapter per supported release range: what varies between releases.

An adapter names the signatures it was written against; a release (or checkout) whose
decision functions differ from every adapter is refused with one line naming the first
function that differs from the closest adapter.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

# The record lives in its own module: the adapters import it, and this package imports them.
from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

__all__ = ["Adapter", "registry", "select"]


def _params(mods: dict[str, ModuleType], where: str) -> tuple[str, ...] | None:
    modname, qual = where.split(":")
    obj: Any = mods.get(modname)
    for part in qual.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    if obj is None or not callable(obj):
        return None
    return tuple(inspect.signature(obj).parameters)


def registry() -> dict[str, Adapter]:
    """Every adapter by name, in the order ``spec/releases.toml`` first names it."""
    from kvproof.checker.upstream.adapters import r0515, r0519, r0521, r0522

    every = (r0515.ADAPTER, r0519.ADAPTER, r0521.ADAPTER, r0522.ADAPTER)
    by_name = {a.name: a for a in every}
    names = dict.fromkeys(r.adapter for r in releases.sglang() if r.adapter)
    return {name: by_name[name] for name in names}


def select(mods: dict[str, ModuleType], tree: str) -> Adapter:
    """The adapter whose every signature the tree has; of several (0.5.15's are a subset
    of 0.5.19's), the one that names the most. Else exit 2 naming the first function the
    closest adapter calls that differs."""
    full: list[Adapter] = []
    best: tuple[int, Adapter, str] | None = None
    for adapter in registry().values():
        first = ""
        matched = 0
        for where, want in adapter.signatures:
            got = _params(mods, where)
            if got == want:
                matched += 1
            elif not first:
                first = _difference(where, want, got, adapter.name)
        if not first:
            full.append(adapter)
        elif best is None or matched > best[0]:
            best = (matched, adapter, first)
    if full:
        return max(full, key=lambda a: len(a.signatures))
    assert best is not None
    raise KvproofInputError(f"no conform adapter for this SGLang code: {best[2]}", tree)


def _difference(where: str, want: tuple[str, ...], got: tuple[str, ...] | None, name: str) -> str:
    shown = where.replace(":", "::")
    if got is None:
        return f"{shown} is missing (the closest adapter, {name}, calls it)"
    return (
        f"{shown}({', '.join(got)}) differs from the closest adapter's ({name}: {', '.join(want)})"
    )
