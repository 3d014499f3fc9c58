"""SGLang ``GET /server_info`` JSON: server args, limits and per-rank pool capacity.

Keys read: ``version``, ``context_length``, ``page_size``, ``disaggregation_mode``,
``max_total_num_tokens``, ``max_req_input_len``,
``internal_states[].memory_usage.token_capacity`` and the 0.5.22-era booleans
``disaggregation_deferred_kv_release`` / ``disaggregation_transfer_checksum``.
The endpoint also returns ``api_key``: it is never read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kvproof.checker.audit.facts import Fact, FileFacts
from kvproof.spec.errors import KvproofInputError


def load_json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # exc.msg names the problem without quoting the document (which holds the api_key).
        raise KvproofInputError(
            f"malformed JSON: {exc.msg} (column {exc.colno}; truncated file?)",
            f"{path}:{exc.lineno}",
        ) from None


def _int(data: Mapping[str, Any], key: str, path: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise KvproofInputError(
            f"must be a positive integer, got {type(value).__name__}", f"{path}: {key}"
        )
    return value


def _capacity(data: Mapping[str, Any], path: str) -> tuple[int, str] | None:
    """The smallest ``token_capacity`` over the data-parallel ranks, if reported."""
    states = data.get("internal_states")
    if states is None:
        return None
    if not isinstance(states, list):
        raise KvproofInputError("must be a list", f"{path}: internal_states")
    best: tuple[int, str] | None = None
    for i, state in enumerate(states):
        key = f"internal_states[{i}].memory_usage.token_capacity"
        usage = state.get("memory_usage") if isinstance(state, dict) else None
        if not isinstance(usage, dict) or "token_capacity" not in usage:
            continue
        value = _int(usage, "token_capacity", path)
        if value is not None and (best is None or value < best[0]):
            best = (value, f"{path}: {key}")
    return best


def parse(text: str, path: str) -> FileFacts:
    data = load_json(text, path)
    if not isinstance(data, dict):
        raise KvproofInputError("server_info must be a JSON object", f"{path}:1")
    facts: dict[str, Fact] = {}
    version = data.get("version")
    if isinstance(version, str):
        facts["version"] = Fact(version.lstrip("v"), f"{path}: version")
    for key, fact in (
        ("context_length", "context_len"),
        ("page_size", "page_size"),
        ("max_req_input_len", "max_req_input_len"),
    ):
        value = _int(data, key, path)
        if value is not None:
            facts[fact] = Fact(value, f"{path}: {key}")
    pool = _int(data, "max_total_num_tokens", path)
    capacity = _capacity(data, path)
    if pool is not None:
        facts["pool_tokens"] = Fact(pool, f"{path}: max_total_num_tokens")
    elif capacity is not None:
        facts["pool_tokens"] = Fact(capacity[0], capacity[1])
    else:
        raise KvproofInputError(
            "no KV pool size (neither max_total_num_tokens nor "
            "internal_states[].memory_usage.token_capacity)",
            f"{path}: max_total_num_tokens",
        )
    mode = data.get("disaggregation_mode")
    if mode is not None:
        if mode not in ("null", "prefill", "decode"):
            raise KvproofInputError(
                "must be 'null', 'prefill' or 'decode'", f"{path}: disaggregation_mode"
            )
        facts["role"] = Fact(mode if mode != "null" else "single", f"{path}: disaggregation_mode")
    for key, fact in (
        ("disaggregation_deferred_kv_release", "deferred_release"),
        ("disaggregation_transfer_checksum", "transfer_checksum"),
    ):
        value = data.get(key)
        if value is not None:
            if not isinstance(value, bool):
                raise KvproofInputError("must be true or false", f"{path}: {key}")
            facts[fact] = Fact(value, f"{path}: {key}")
    return FileFacts(path=path, format="sglang-server-info", engine="sglang", facts=facts)
