"""Where the release's code comes from: a cached wheel, or the user's own tree.

``--sglang VERSION`` is fetched once with ``pip download --no-deps sglang==VERSION`` and its
Python sources unpacked into ``$XDG_CACHE_HOME/kvproof/sglang/VERSION`` (default
``~/.cache``); ``KVPROOF_SGLANG_WHEELS`` may name a folder of already downloaded wheels,
looked in before the index. ``--sglang PATH`` is an unpacked wheel or an SGLang checkout:
the folder holding ``sglang/`` (``python/`` in the SGLang repository).
"""

from __future__ import annotations

import os
from pathlib import Path

from kvproof.checker.conform.wheels import Wheels
from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

# The releases a conform adapter drives, from ``spec/releases.toml`` (the one home of them).
RELEASES = releases.adapted("sglang")
MARKER = Path("sglang", "srt", "disaggregation", "decode.py")


WHEELS = Wheels("sglang", "SGLang", "KVPROOF_SGLANG_WHEELS", "--sglang", "an SGLang checkout")


def cache_root() -> Path:
    return WHEELS.cache_root()


def resolve(spec: str) -> tuple[Path, str]:
    """The tree holding ``sglang/`` and a label for it (the version, or the path)."""
    if spec in RELEASES:
        return cached(spec), spec
    known = releases.get("sglang", spec)
    if known is not None:  # an SGLang release, but not one conform can drive
        raise KvproofInputError(f"no adapter for SGLang {spec}: {known.no_adapter}", spec)
    path = Path(spec).expanduser()
    if path.exists() or os.sep in spec or spec.startswith("."):
        for tree in (path, path / "python"):
            if (tree / MARKER).is_file():
                return tree.resolve(), str(path)
        raise KvproofInputError(f"not an SGLang tree (no {MARKER} under it)", spec)
    raise KvproofInputError(
        f"unknown SGLang version (known: {', '.join(RELEASES)}; or pass a PATH)", spec
    )


def cached(version: str) -> Path:
    return WHEELS.cached(version, MARKER)
