"""vLLM as a conform engine (``checker/conform/engine.py::Engine``): the release's modules
loaded once per run (``loader.Loaded``), a fresh ``Pair`` of schedulers and workers per walk.

``open_vllm(variant, release)`` checks its input before loading anything (the variant's
engine, the tree, an adapter for it) and yields the engine; the loaded modules leave
``sys.modules`` when it exits. The variant's ``[upstream.kv_transfer_config]`` and
``[upstream.kv_connector_extra_config]`` are what the engines run under; a key neither
table gives is the release's default (``config.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvproof.checker.conform.engine import RequestSpec
from kvproof.checker.conform.vllm import adapters, fetch
from kvproof.checker.conform.vllm.harness import VllmHarness
from kvproof.checker.conform.vllm.loader import Loaded
from kvproof.checker.conform.vllm.modules import load
from kvproof.checker.conform.vllm.pair import LEASE, Pair
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant

SIZES = {"Req": 2, "Page": 2}
# kv_connector_extra_config keys the harness passes on (others are refused: exit 2).
EXTRA = ("transfer_mode", "kv_lease_duration")


@dataclass
class VllmEngine:
    release: str
    root: Path  # the loaded vllm/ folder
    mods: dict[str, Any]
    adapter_obj: adapters.Adapter
    mode: str
    policy: str
    extra: tuple[tuple[str, Any], ...]
    settings: dict[str, Any]
    settings_source: dict[str, str]
    name: str = "vllm"
    sizes: Mapping[str, int] = field(default_factory=lambda: dict(SIZES))

    @property
    def adapter(self) -> str:
        return self.adapter_obj.name

    def harness(self, requests: tuple[RequestSpec, ...]) -> VllmHarness:
        pair = Pair(self.mods, self.mode, self.policy, self.extra, self.adapter_obj.config)
        return VllmHarness(pair, requests, self.root)

    def exercised(self) -> tuple[str, ...]:
        return self.adapter_obj.exercised

    def run_decisions(self) -> Mapping[str, int]:
        return {}


def check_variant(variant: Variant) -> None:
    if variant.engine != "vllm":
        raise KvproofInputError(f"not a vLLM variant (engine {variant.engine!r})", variant.name)


def _settings(variant: Variant) -> tuple[str, dict[str, Any], dict[str, str], tuple]:
    table = variant.upstream
    kv = dict(table.kv_transfer_config) if table else {}
    extra = dict(table.kv_connector_extra_config) if table else {}
    where = f"{variant.path}: upstream.kv_connector_extra_config"
    for key in extra:
        if key not in EXTRA:
            raise KvproofInputError(f"conform --vllm does not drive {key!r}", f"{where}.{key}")
    mode = str(extra.get("transfer_mode", variant.switches.transfer_mode))
    if mode != variant.switches.transfer_mode:
        raise KvproofInputError(
            f"transfer_mode {mode!r} but the variant's switch says "
            f"{variant.switches.transfer_mode!r}",
            f"{where}.transfer_mode",
        )
    policy = str(kv.get("kv_load_failure_policy", "fail"))
    used = {
        "transfer_mode": mode,
        "kv_load_failure_policy": policy,
        "kv_lease_duration": extra.get("kv_lease_duration", LEASE),
    }
    source = {k: "variant" if k in kv or k in extra else "release default" for k in used}
    if "transfer_mode" not in extra:
        source["transfer_mode"] = "variant switch"
    pairs = tuple((k, v) for k, v in extra.items() if k != "transfer_mode")
    return policy, used, source, (("transfer_mode", mode), *pairs)


@contextmanager
def open_vllm(variant: Variant, vllm: str) -> Iterator[VllmEngine]:
    check_variant(variant)
    policy, used, source, extra = _settings(variant)
    tree, label = fetch.resolve(vllm)
    adapter = adapters.select(tree)
    # The release logs every expiry and late read it meets, once per walk.
    logging.disable(logging.ERROR)
    try:
        with Loaded(tree) as loaded:
            mods = load(loaded)
            mode = str(used["transfer_mode"])
            root = (tree / "vllm").resolve()
            yield VllmEngine(label, root, mods, adapter, mode, policy, extra, used, source)
    finally:
        logging.disable(logging.NOTSET)
