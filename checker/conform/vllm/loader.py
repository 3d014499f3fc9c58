"""Load vLLM's own modules from the user's tree; stand in for what its decision path never
calls, so that a user need not install vLLM's dependency set.

A meta-path finder answers every ``vllm.*`` import from the tree (``TREE/vllm/...``), except
the modules in ``STANDIN``: the model executor, the platform probe, compiled ops and the
multimodal/tokenizer machinery, which the scheduler and the connectors import for types or
for paths conform never drives. Third-party packages a ``vllm`` module imports and this
environment lacks (msgspec, zmq, transformers, ...) are stand-ins too (``checker/upstream/
stubs.py``, shared with the SGLang side). ``Loaded`` saves ``sys.modules`` on entry and
restores it on exit, so two runs (two trees) never share a module.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.abc
import importlib.util
import sys
import types
from pathlib import Path
from types import FrameType
from typing import Any

from kvproof.checker.upstream.loader import found_elsewhere
from kvproof.checker.upstream.stubs import SPECIAL, StubModule
from kvproof.spec.errors import KvproofInputError

# vLLM modules that are stand-ins: each is imported by a module conform runs real, and
# nothing conform drives calls into it (checked by the tests: a call into a stand-in
# returns a falsy stand-in, which the projection would show as a lost block).
STANDIN = (
    "vllm._C",
    "vllm._custom_ops",
    "vllm.model_executor",
    "vllm.platforms",
    "vllm.multimodal",
    "vllm.tokenizers",
    "vllm.transformers_utils",
    "vllm.compilation",
    "vllm.attention",
    "vllm.v1.attention",
    "vllm.v1.worker",
    "vllm.v1.structured_output",
    "vllm.v1.spec_decode",
    "vllm.v1.metrics",
    "vllm.lora",
    "vllm.distributed.parallel_state",
    "vllm.distributed.ec_transfer",
    "vllm.distributed.kv_events",
    "vllm.distributed.aux_output_connector",
    "vllm.distributed.device_communicators",
    "vllm.forward_context",
    "vllm.config",
    "vllm.sampling_params",
    "vllm.pooling_params",
)


# Config modules run real (their dataclasses carry the release's defaults: the lease, the
# failure policy, the scheduler's limits) under a plain ``dataclasses.dataclass`` in place of
# ``vllm.config.utils.config`` (pydantic's validating dataclass, not installed).
REAL_CONFIG = (
    "vllm.config.kv_transfer",
    "vllm.config.scheduler",
    "vllm.config.cache",
    "vllm.v1.structured_output.request",  # from_sampling_params: None for plain text
)


def _stood_in(name: str) -> bool:
    if name in REAL_CONFIG:
        return False
    return any(name == s or name.startswith(s + ".") for s in STANDIN)


def _plain_config(cls: Any = None, **kwargs: Any) -> Any:
    """``vllm.config.utils.config`` without pydantic: the class as a plain dataclass."""
    if cls is None:
        return lambda c: dataclasses.dataclass(c)
    return dataclasses.dataclass(cls)


def _pydantic_field(default: Any = dataclasses.MISSING, **kwargs: Any) -> Any:
    """``pydantic.Field`` as a dataclass field: the default kept, the bounds not checked."""
    keep = {k: v for k, v in kwargs.items() if k in ("default_factory", "init")}
    return dataclasses.field(default=default, **keep)


def _validator(*args: Any, **kwargs: Any) -> Any:
    """``field_validator``/``model_validator``: the method left undecorated (never run)."""
    return lambda fn: fn


_SPECIAL = {
    **SPECIAL,
    "vllm.config.utils": {"config": _plain_config},
    "pydantic": {
        "Field": _pydantic_field,
        "field_validator": _validator,
        "model_validator": _validator,
    },
}


def _imported_by_vllm() -> bool:
    """Whether the import being run is in a ``vllm`` module: only those get stand-ins for
    absent packages (the standard library probes ``_winapi`` and the like)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith(("importlib", __name__)):
            return bool(mod == "vllm" or mod.startswith("vllm."))
        frame = frame.f_back
    return False


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.created: set[str] = set()  # stand-in modules, removed after the run

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        top = name.split(".")[0]
        if top == "vllm":
            return self._vllm_spec(name)
        if top in self.created or (
            "." not in name
            and _imported_by_vllm()
            and not found_elsewhere(self, name, path, target)
        ):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def _vllm_spec(self, name: str) -> Any:
        if _stood_in(name):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        rel = Path(*name.split("."))
        pkg = self.tree / rel / "__init__.py"
        file = pkg if pkg.is_file() else self.tree / rel.with_suffix(".py")
        if not file.is_file():
            return importlib.util.spec_from_loader(name, self, is_package=True)
        loc = [str(file.parent)] if file.name == "__init__.py" else None
        return importlib.util.spec_from_file_location(name, file, submodule_search_locations=loc)

    # Loader half: stand-in modules.
    def create_module(self, spec: Any) -> types.ModuleType:
        # A stood-in third-party package's submodules (``zmq.asyncio``) are stand-ins too.
        self.created.add(spec.name)
        module = StubModule(spec.name)
        module.__path__ = []
        for key, value in _SPECIAL.get(spec.name, {}).items():
            setattr(module, key, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class Loaded:
    """vLLM's modules, loaded for one run: ``with Loaded(tree) as m: m.module(name)``."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self._saved: dict[str, types.ModuleType] = {}
        self._finder = _Finder(tree)

    def __enter__(self) -> Loaded:
        self._saved = dict(sys.modules)
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.meta_path.insert(0, self._finder)
        sys.modules.update(_kept)
        return self

    def module(self, name: str) -> types.ModuleType:
        try:
            return importlib.import_module(name)
        except (ImportError, SyntaxError) as exc:
            raise KvproofInputError(f"{self.tree}: cannot load {name} ({exc})") from None

    def __exit__(self, *exc: Any) -> None:
        sys.meta_path.remove(self._finder)
        _kept.update({n: sys.modules[n] for n in PROCESS_WIDE if n in sys.modules})
        for name in [n for n in sys.modules if _ours(n) or n in self._finder.created]:
            del sys.modules[name]
        sys.modules.update({n: m for n, m in self._saved.items() if _ours(n)})


# Modules whose import registers something with torch for the whole process
# (``vllm/utils/torch_utils.py`` registers ``LayerName`` as an opaque type): loaded once and
# kept, since a second import raises. Utilities, not decisions.
PROCESS_WIDE = ("vllm.utils.torch_utils",)
_kept: dict[str, types.ModuleType] = {}


def _ours(name: str) -> bool:
    return name == "vllm" or name.startswith("vllm.")
