"""A cached SGLang release for the conform tests: its tree, or the files conform loads real
copied into a PATH tree (as an SGLang developer's checkout or branch would hold them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.run import ALSO_READ, REAL
from kvproof.spec.errors import KvproofInputError


def tree(version: str) -> Path:
    """The release's unpacked wheel in the kvproof cache; the test skips without one."""
    try:
        return fetch.cached(version)
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")


def copy_release(version: str, dest: Path) -> Path:
    """The files conform loads real, copied from the cached wheel: a PATH tree."""
    src = tree(version)
    for name in REAL:
        rel = Path(*name.split("."))
        for cand in (rel / "__init__.py", rel.with_suffix(".py")):
            if (src / cand).is_file():
                (dest / cand).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src / cand, dest / cand)
                break
    for rel in ALSO_READ:  # read from the tree without importing its module
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, dest / rel)
    return dest
