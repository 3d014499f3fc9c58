"""Where the release's code comes from: a cached wheel, or the user's own tree.

``--sglang VERSION`` is fetched once with ``pip download --no-deps sglang==VERSION`` and its
Python sources unpacked into ``$XDG_CACHE_HOME/kvproof/sglang/VERSION`` (default
``~/.cache``); ``KVPROOF_SGLANG_WHEELS`` may name a folder of already downloaded wheels,
looked in before the index. ``--sglang PATH`` is an unpacked wheel or an SGLang checkout:
the folder holding ``sglang/`` (``python/`` in the SGLang repository).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

# The releases a conform adapter drives, from ``spec/releases.toml`` (the one home of them).
RELEASES = releases.adapted("sglang")
MARKER = Path("sglang", "srt", "disaggregation", "decode.py")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvproof" / "sglang"


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
    tree = cache_root() / version
    if (tree / MARKER).is_file():
        return tree
    wheel = _local_wheel(version) or _download(version)
    _unpack(wheel, tree)
    return tree


def _local_wheel(version: str) -> Path | None:
    folder = os.environ.get("KVPROOF_SGLANG_WHEELS")
    if not folder:
        return None
    found = sorted(Path(folder).glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


def _download(version: str) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="kvproof-sglang-"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", "3.11", "-d", str(dest), f"sglang=={version}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KvproofInputError(_offline(version, str(exc)), f"sglang=={version}") from None
    wheels = sorted(dest.glob("sglang-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise KvproofInputError(_offline(version, last), f"sglang=={version}")
    return wheels[0]


def _offline(version: str, why: str) -> str:
    return (
        f"cannot fetch sglang=={version} from the package index ({why}); "
        "pass --sglang PATH to an unpacked wheel or an SGLang checkout"
    )


def _unpack(wheel: Path, tree: Path) -> None:
    """The wheel's Python sources only (the compiled extensions are never imported)."""
    part = tree.with_name(tree.name + ".part")
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("sglang/") and name.endswith(".py"):
                zf.extract(name, part)
    part.rename(tree) if not tree.exists() else None
