"""SGLang ``GET /server_info`` JSON: server args, limits, per-rank pool and environment.

The endpoint returns ``{**asdict(server_args), **scheduler_info, "internal_states": [...],
"version": ...}`` (python/sglang/srt/entrypoints/http_server.py; older servers serve the
same at ``/get_server_info``). Read: ``version``, the server args of ``sglang_args.ARGS``,
``disaggregation_mode``, ``max_req_input_len`` (the admission limit the scheduler derived),
``max_total_num_tokens``, ``internal_states[i].memory_usage.token_capacity`` (the KV pool,
authoritative: the smallest rank wins) and ``internal_states[i].env_vars`` (present only
with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``; see ``sglang_env``). The endpoint also returns
``api_key``: it is never read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kvproof.ops.audit import sglang_env
from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.sglang_args import arg_facts
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


def _int(data: Mapping[str, Any], key: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise KvproofInputError(
            f"must be a positive integer, got {type(value).__name__}", f"{where}: {key}"
        )
    return value


def _states(data: Mapping[str, Any], path: str) -> list[tuple[int, Mapping[str, Any]]]:
    states = data.get("internal_states")
    if states is None:
        return []
    if not isinstance(states, list):
        raise KvproofInputError("must be a list", f"{path}: internal_states")
    return [(i, s) for i, s in enumerate(states) if isinstance(s, dict)]


def _capacity(data: Mapping[str, Any], path: str) -> Fact | None:
    """The smallest ``token_capacity`` over the data-parallel ranks, if reported."""
    best: Fact | None = None
    for i, state in _states(data, path):
        usage = state.get("memory_usage")
        if not isinstance(usage, dict) or "token_capacity" not in usage:
            continue
        key = f"internal_states[{i}].memory_usage.token_capacity"
        value = _int(usage, "token_capacity", f"{path}: internal_states[{i}].memory_usage")
        if value is not None and (best is None or value < int(best.value)):
            best = Fact(value, f"{path}: {key}")
    return best


def _env(data: Mapping[str, Any], path: str) -> dict[str, Fact]:
    """``env_vars`` of the first rank that lists them; ranks share one environment."""
    for i, state in _states(data, path):
        env = state.get("env_vars")
        if env is None:
            continue
        listing = f"{path}: internal_states[{i}].env_vars"
        if not isinstance(env, dict):
            raise KvproofInputError("must be an object", listing)
        return sglang_env.env_facts({k: (v, f"{listing}.{k}") for k, v in env.items()}, listing)
    return {}


def parse(text: str, path: str) -> FileFacts:
    data = load_json(text, path)
    if not isinstance(data, dict):
        raise KvproofInputError("server_info must be a JSON object", f"{path}:1")
    facts = arg_facts(data, path, key_where=True)
    version = data.get("version")
    if version is not None:
        if not isinstance(version, str):
            raise KvproofInputError("must be a string", f"{path}: version")
        facts["version"] = Fact(version.lstrip("v"), f"{path}: version")
    limit = _int(data, "max_req_input_len", path)
    if limit is not None:
        facts["max_req_input_len"] = Fact(limit, f"{path}: max_req_input_len")
    capacity = _capacity(data, path)
    pool = _int(data, "max_total_num_tokens", path)
    if capacity is not None:
        facts["pool_tokens"] = capacity
    elif pool is not None:
        facts["pool_tokens"] = Fact(pool, f"{path}: max_total_num_tokens")
    else:
        raise KvproofInputError(
            "no KV pool size (neither internal_states[].memory_usage.token_capacity nor "
            "max_total_num_tokens)",
            f"{path}: max_total_num_tokens",
        )
    facts.update(_env(data, path))
    return FileFacts(path=path, format="sglang-server-info", engine="sglang", facts=facts)
