"""Load only the release's decision modules real, from the user's tree; stand in for the rest.

A meta-path finder answers every ``sglang.*`` import: a module named in ``real`` is executed
from the tree (``TREE/sglang/...``), any other one is a ``StubModule``; third-party packages
the real modules import and this environment lacks (msgspec, setproctitle, aiohttp, ...) are
stand-ins too. ``Loaded`` is used as a context: it saves ``sys.modules`` and restores it on
exit, so two runs (two releases) never share a module and tests do not pollute each other.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
import types
from pathlib import Path
from types import FrameType
from typing import Any

from kvproof.checker.upstream.stubs import SPECIAL, StubModule
from kvproof.spec.errors import KvproofInputError


def _imported_by_sglang() -> bool:
    """Whether the import statement being run is in an ``sglang`` module: only those get
    stand-ins for absent packages (the standard library probes ``_winapi`` and the like)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith(("importlib", "kvproof.checker.upstream.loader")):
            return bool(mod == "sglang" or mod.startswith("sglang."))
        frame = frame.f_back
    return False


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, tree: Path, real: frozenset[str]) -> None:
        self.tree = tree
        self.real = real
        self.created: set[str] = set()  # stand-in modules, removed after the run

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        top = name.split(".")[0]
        if top == "sglang":
            return self._sglang_spec(name)
        if (
            "." not in name
            and _imported_by_sglang()
            and not found_elsewhere(self, name, path, target)
        ):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def _sglang_spec(self, name: str) -> Any:
        rel = Path(*name.split("."))
        pkg = self.tree / rel / "__init__.py"
        if name in self.real:
            file = pkg if pkg.is_file() else self.tree / rel.with_suffix(".py")
            if not file.is_file():
                # The tree is SGLang (``fetch.resolve`` found its decode.py): an older or
                # newer layout, not a foreign tree.
                raise KvproofInputError(
                    f"no conform adapter for this SGLang code: {rel.with_suffix('.py')} "
                    "is missing (every adapter loads it)",
                    str(self.tree),
                )
            loc = [str(file.parent)] if file.name == "__init__.py" else None
            return importlib.util.spec_from_file_location(
                name, file, submodule_search_locations=loc
            )
        return importlib.util.spec_from_loader(name, self, is_package=True)

    # Loader half: stand-in modules.
    def create_module(self, spec: Any) -> types.ModuleType:
        self.created.add(spec.name)
        module = StubModule(spec.name)
        module.__path__ = []  # a package, so submodules resolve through the finder
        for key, value in SPECIAL.get(spec.name, {}).items():
            setattr(module, key, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class Loaded:
    """The release's modules, loaded for one run; ``with Loaded(tree, real) as m:``."""

    def __init__(self, tree: Path, real: frozenset[str]) -> None:
        self.tree = tree
        self.real = real
        self._saved: dict[str, types.ModuleType] = {}
        self._finder = _Finder(tree, real)
        self._added_warning_once = False

    def __enter__(self) -> Loaded:
        self._saved = dict(sys.modules)
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, self._finder)
        # SGLang's utils add ``Logger.warning_once`` at import; its utils are stand-ins.
        self._added_warning_once = not hasattr(logging.Logger, "warning_once")
        if self._added_warning_once:
            logging.Logger.warning_once = logging.Logger.warning  # type: ignore[attr-defined]
        return self

    def module(self, name: str) -> types.ModuleType:
        return importlib.import_module(name)

    def __exit__(self, *exc: Any) -> None:
        sys.meta_path.remove(self._finder)
        if self._added_warning_once:
            del logging.Logger.warning_once  # type: ignore[attr-defined]
        # Only what this run put there goes: the release's modules and the stand-ins
        # (numpy or torch imported for the first time stay: extensions load once).
        for name in [n for n in sys.modules if _ours(n) or n in self._finder.created]:
            del sys.modules[name]
        sys.modules.update({n: m for n, m in self._saved.items() if _ours(n)})


def _ours(name: str) -> bool:
    return name == "sglang" or name.startswith("sglang.")


def found_elsewhere(finder: Any, name: str, path: Any, target: Any) -> bool:
    """Whether any finder but ``finder`` (builtins, frozen, the path) has the module: a
    third-party package that is installed loads real, only an absent one is stood in for
    (both engines' loaders)."""
    return any(
        other is not finder and other.find_spec(name, path, target) is not None
        for other in sys.meta_path
    )
