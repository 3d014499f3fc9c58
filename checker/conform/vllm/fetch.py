"""Where vLLM's release code comes from: a cached wheel, or the user's own tree.

``--vllm VERSION`` is fetched once with ``pip download --no-deps vllm==VERSION`` and its
Python sources unpacked into ``$XDG_CACHE_HOME/kvproof/vllm/VERSION`` (default ``~/.cache``);
``KVPROOF_VLLM_WHEELS`` may name a folder of already downloaded wheels, looked in before the
index. ``--vllm PATH`` is an unpacked wheel or a vLLM checkout: the folder holding ``vllm/``.
The same shape as the SGLang side's ``checker/upstream/fetch.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kvproof.checker.conform.wheels import Wheels
from kvproof.spec.errors import KvproofInputError

# The scheduler's file: what makes a folder a vLLM tree.
MARKER = Path("vllm", "v1", "core", "sched", "scheduler.py")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.-]?(post|rc|dev)\d*)?$")


WHEELS = Wheels("vllm", "vLLM", "KVPROOF_VLLM_WHEELS", "--vllm", "a vLLM checkout", timeout_s=1200)


def cache_root() -> Path:
    return WHEELS.cache_root()


def resolve(spec: str) -> tuple[Path, str]:
    """The tree holding ``vllm/`` and a label for it (the version, or the path given)."""
    path = Path(spec).expanduser()
    if path.exists() or os.sep in spec or spec.startswith("."):
        if (path / MARKER).is_file():
            return path.resolve(), str(path)
        raise KvproofInputError(f"not a vLLM tree (no {MARKER} under it)", spec)
    if not _VERSION.match(spec):
        raise KvproofInputError("not a vLLM version (like 0.34.0) nor an existing PATH", spec)
    return cached(spec), spec


def cached(version: str) -> Path:
    tree = WHEELS.cached(version, MARKER)
    if not (tree / MARKER).is_file():
        raise KvproofInputError(f"vllm=={version} ships no {MARKER}", str(tree))
    return tree
