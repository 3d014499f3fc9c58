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
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kvproof.spec.errors import KvproofInputError

# The scheduler's file: what makes a folder a vLLM tree.
MARKER = Path("vllm", "v1", "core", "sched", "scheduler.py")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.-]?(post|rc|dev)\d*)?$")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvproof" / "vllm"


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
    tree = cache_root() / version
    if (tree / MARKER).is_file():
        return tree
    wheel = _local_wheel(version) or _download(version)
    _unpack(wheel, tree)
    if not (tree / MARKER).is_file():
        raise KvproofInputError(f"vllm=={version} ships no {MARKER}", str(wheel))
    return tree


def _local_wheel(version: str) -> Path | None:
    folder = os.environ.get("KVPROOF_VLLM_WHEELS")
    if not folder:
        return None
    found = sorted(Path(folder).glob(f"vllm-{version}-*.whl"))
    return found[0] if found else None


def _download(version: str) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="kvproof-vllm-"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["-d", str(dest), f"vllm=={version}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KvproofInputError(_offline(version, str(exc)), f"vllm=={version}") from None
    wheels = sorted(dest.glob("vllm-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        if "No matching distribution" in last or "from versions" in last:
            raise KvproofInputError(f"unknown vLLM version ({last})", f"vllm=={version}")
        raise KvproofInputError(_offline(version, last), f"vllm=={version}")
    return wheels[0]


def _offline(version: str, why: str) -> str:
    return (
        f"cannot fetch vllm=={version} from the package index ({why}); "
        "pass --vllm PATH to an unpacked wheel or a vLLM checkout"
    )


def _unpack(wheel: Path, tree: Path) -> None:
    """The wheel's Python sources only (its compiled extensions are never imported)."""
    part = tree.with_name(tree.name + ".part")
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("vllm/") and name.endswith(".py"):
                zf.extract(name, part)
    if not tree.exists():
        part.rename(tree)
