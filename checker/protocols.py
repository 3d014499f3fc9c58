"""Which protocol and which variants a command runs on: kvproof's own, or a user's."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import VARIANTS_DIR, Variant, list_variants, load_variant


def load_factory(spec: str) -> Callable[[Any], Any]:
    """``module:attr`` -> a callable taking a variant's switches and returning a Protocol.

    ``attr`` may be a factory function or an object with a ``build(switches)`` method.
    """
    if ":" not in spec:
        raise KvproofInputError("expected 'module:attr'", f"--protocol {spec}")
    modname, attr = spec.split(":", 1)
    try:
        module = importlib.import_module(modname)
    except ImportError as exc:
        raise KvproofInputError(f"cannot import {modname}: {exc}", "--protocol") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise KvproofInputError(f"{modname} has no attribute {attr!r}", "--protocol")
    if hasattr(obj, "build"):
        return obj.build  # type: ignore[no-any-return]
    if not callable(obj):
        raise KvproofInputError(f"{spec} is not callable", "--protocol")
    return obj  # type: ignore[no-any-return]


def resolve_variants(
    names: Sequence[str], every: bool, folder: Path | None = None
) -> list[Variant]:
    folder = folder or VARIANTS_DIR
    if every:
        return list_variants(folder)
    return [load_variant(n, folder) for n in names]
