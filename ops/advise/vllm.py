"""``kvproof advise vllm==0.34.0``: the vLLM side of the deployment and of the match.

vLLM's PD settings ``conform --vllm`` drives are three (``checker/conform/vllm/engine.py``):
``transfer_mode`` and ``kv_lease_duration`` of ``kv_connector_extra_config`` and
``kv_load_failure_policy`` of ``kv_transfer_config``, given as ``--server-arg NAME=VALUE``.
Their defaults are the release's (read in the 0.34.0 wheel):
``distributed/kv_transfer/kv_connector/factory.py`` (``get_from_extra_config("transfer_mode",
"pull")``), ``.../v1/nixl/base_scheduler.py::__init__`` (``kv_lease_duration``, 30) and
``config/kv_transfer.py::KVTransferConfig`` (``kv_load_failure_policy = "fail"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.upstream import Upstream
from kvproof.spec.variant import Variant

# name -> (the [upstream] table it lives in, the release's default)
SETTINGS: dict[str, tuple[str, Any]] = {
    "transfer_mode": ("kv_connector_extra_config", "pull"),
    "kv_lease_duration": ("kv_connector_extra_config", 30),
    "kv_load_failure_policy": ("kv_transfer_config", "fail"),
}
CHOICES = {"transfer_mode": ("pull", "push"), "kv_load_failure_policy": ("fail", "recompute")}


def tree_of(version: str) -> Path:
    """The release's code, checked to be one conform --vllm drives (before any work)."""
    from kvproof.checker.conform.vllm import adapters, fetch

    tree, _ = fetch.resolve(version)
    adapters.select(tree)
    return tree


def settings(pairs: Sequence[tuple[str, str]], env: Sequence[str]) -> dict[str, Any]:
    if env:
        raise KvproofInputError(
            "vLLM's PD settings conform drives are kv-transfer settings, not environment "
            f"variables: --server-arg NAME=VALUE, NAME one of {', '.join(SETTINGS)}",
            "--env",
        )
    out: dict[str, Any] = {}
    for name, text in pairs:
        if name not in SETTINGS:
            raise KvproofInputError(
                f"vLLM: conform drives {', '.join(SETTINGS)}, not {name}", "--server-arg"
            )
        value: Any = text.strip()
        if name in CHOICES and value not in CHOICES[name]:
            raise KvproofInputError(
                f"{name} is one of {', '.join(CHOICES[name])}, got {text!r}", "--server-arg"
            )
        if name == "kv_lease_duration":
            if not value.isdigit() or int(value) <= 0:
                raise KvproofInputError(f"{name} is whole seconds, got {text!r}", "--server-arg")
            value = int(value)
        out[name] = value
    return out


def effective(table: Upstream | None, name: str) -> Any:
    where, default = SETTINGS[name]
    return dict(getattr(table, where, {}) if table else {}).get(name, default)


def listed(variant: Variant, version: str, given: dict[str, Any]) -> bool:
    up = variant.upstream
    if up is None or version not in up.releases:
        return False
    return all(effective(up, k) == given.get(k, SETTINGS[k][1]) for k in SETTINGS)


def as_operator_runs(variant: Variant, given: dict[str, Any]) -> Variant | None:
    """The variant's switches under the operator's settings; None when its transfer mode
    is not theirs (the connector is another class: no walk could agree)."""
    mode = given.get("transfer_mode", SETTINGS["transfer_mode"][1])
    if variant.switches.transfer_mode != mode:
        return None
    tables: dict[str, dict[str, Any]] = {"kv_transfer_config": {}, "kv_connector_extra_config": {}}
    for name, value in given.items():
        tables[SETTINGS[name][0]][name] = value
    up = Upstream(
        "vllm",
        exempt="kvproof advise",
        kv_transfer_config=tables["kv_transfer_config"],
        kv_connector_extra_config=tables["kv_connector_extra_config"],
    )
    return dataclasses.replace(variant, assume={}, upstream=up)


def conform(variant: Variant, version: str, traces: int, seed: int) -> Any:
    from kvproof.checker.conform.vllm.run import conform as conform_vllm

    return conform_vllm(variant, version, traces=traces, seed=seed, faults=True)
