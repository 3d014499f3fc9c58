"""A release's Python sources from its wheel, fetched once: the cache both engines' ``fetch``
modules share (``checker/upstream/fetch.py`` for SGLang, ``checker/conform/vllm/fetch.py``).

``$XDG_CACHE_HOME/kvproof/PACKAGE/VERSION`` (default ``~/.cache``) holds the unpacked
sources; a folder named by the engine's environment variable (``KVPROOF_SGLANG_WHEELS``,
``KVPROOF_VLLM_WHEELS``) is looked in before the package index. Only ``.py`` files are
unpacked: the compiled extensions are never imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class Wheels:
    package: str  # "sglang" | "vllm"
    display: str  # "SGLang" | "vLLM"
    folder_env: str  # the variable naming a folder of downloaded wheels
    flag: str  # the CLI flag that takes a PATH instead ("--sglang")
    tree_kind: str  # "an SGLang checkout"
    timeout_s: int = 600

    def cache_root(self) -> Path:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "kvproof" / self.package

    def cached(self, version: str, marker: Path) -> Path:
        """The unpacked tree of ``version``, fetched and unpacked on first use."""
        tree = self.cache_root() / version
        if (tree / marker).is_file():
            return tree
        self._unpack(self._local(version) or self._download(version), tree)
        return tree

    def _local(self, version: str) -> Path | None:
        folder = os.environ.get(self.folder_env)
        if not folder:
            return None
        found = sorted(Path(folder).glob(f"{self.package}-{version}-*.whl"))
        return found[0] if found else None

    def _download(self, version: str) -> Path:
        dest = Path(tempfile.mkdtemp(prefix=f"kvproof-{self.package}-"))
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--python-version", "3.11", "-d", str(dest), f"{self.package}=={version}"]
        key = f"{self.package}=={version}"
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise KvproofInputError(self._offline(version, str(exc)), key) from None
        wheels = sorted(dest.glob(f"{self.package}-*.whl"))
        if done.returncode != 0 or not wheels:
            lines = done.stderr.strip().splitlines() or ["pip failed"]
            # A reachable index lists the versions it has; an unreachable one lists none.
            listed = any("from versions:" in x and "(from versions: none)" not in x for x in lines)
            if listed:
                raise KvproofInputError(f"unknown {self.display} version ({lines[-1]})", key)
            raise KvproofInputError(self._offline(version, lines[-1]), key)
        return wheels[0]

    def _offline(self, version: str, why: str) -> str:
        return (
            f"cannot fetch {self.package}=={version} from the package index ({why}); "
            f"pass {self.flag} PATH to an unpacked wheel or {self.tree_kind}"
        )

    def _unpack(self, wheel: Path, tree: Path) -> None:
        part = tree.with_name(tree.name + ".part")
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(f"{self.package}/") and name.endswith(".py"):
                    zf.extract(name, part)
        if not tree.exists():
            part.rename(tree)
