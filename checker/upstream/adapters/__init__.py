"""One small adapter per supported release range: what varies between releases.

An adapter names the signatures it was written against; a release (or checkout) whose
decision functions differ from every adapter is refused with one line naming the first
function that differs from the closest adapter.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class Adapter:
    name: str  # the release range, e.g. "0.5.19-0.5.20"
    # "module:Class.function" -> the parameter names the adapter calls it with
    signatures: tuple[tuple[str, tuple[str, ...]], ...]
    make_queue: Callable[..., Any]  # (decode, allocator, buffers, scheduler, tree) -> queue
    note_ack: Callable[[Any, Any], None]  # (manager, receiver): prefill's ABORT_ACK
    # deferred release as the manager computes it from the env switch
    deferred: Callable[[bool, type], bool]


def _params(mods: dict[str, ModuleType], where: str) -> tuple[str, ...] | None:
    modname, qual = where.split(":")
    obj: Any = mods.get(modname)
    for part in qual.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    if obj is None or not callable(obj):
        return None
    return tuple(inspect.signature(obj).parameters)


def select(mods: dict[str, ModuleType], tree: str) -> Adapter:
    from kvproof.checker.upstream.adapters import r0519, r0521, r0522

    best: tuple[int, Adapter, str] | None = None
    for adapter in (r0519.ADAPTER, r0521.ADAPTER, r0522.ADAPTER):
        first = ""
        matched = 0
        for where, want in adapter.signatures:
            got = _params(mods, where)
            if got == want:
                matched += 1
            elif not first:
                first = f"{where}{'(' + ', '.join(got) + ')' if got else ' is missing'}"
        if not first:
            return adapter
        if best is None or matched > best[0]:
            best = (matched, adapter, first)
    assert best is not None
    raise KvproofInputError(
        f"no conform adapter for this SGLang code: {best[2]} differs from the "
        f"{best[1].name} adapter",
        tree,
    )
