"""What one file says about one node: values with the place each was read from.

Every parser returns ``FileFacts``; the deployment merges them per node. Keeping the
place (``path:line`` or ``path: key``) with each number lets the report say where an
operator can see it for themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# The facts a parser may report; anything else is a bug in the parser.
FIELDS = (
    "role",  # prefill | decode | single
    "version",  # engine version string, e.g. "0.5.19"
    "context_len",  # the engine's context length (tokens)
    "pool_tokens",  # KV pool size (tokens)
    "page_size",  # tokens per KV page / block
    "max_req_input_len",  # the longest prompt the engine admits, as it reports it
    # SGLang server arguments (server_args.py)
    "transfer_checksum",  # disaggregation_enable_kv_checksum (#39500)
    "transfer_backend",  # disaggregation_transfer_backend
    "decode_radix_cache",  # disaggregation_decode_enable_radix_cache
    "reserved_decode_tokens",  # num_reserved_decode_tokens
    # SGLang environment variables (environ.py), set explicitly
    "deferred_release",  # SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE
    "release_timeout_s",  # SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT
    "waiting_timeout_s",  # SGLANG_DISAGGREGATION_WAITING_TIMEOUT
    "bootstrap_timeout_s",  # SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT
    "heartbeat_interval_s",  # SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL
    "heartbeat_max_failure",  # SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE
    "env_exposed",  # the file lists the environment (absent variable = default)
    # what the metrics saw
    "slowest_transfer_s",  # at least one KV transfer took longer than this (histogram)
    # vLLM NIXL connector
    "kv_connector",  # NixlConnector (= pull) | NixlPullConnector | NixlPushConnector | ...
    "kv_lease_duration_s",  # kv_connector_extra_config.kv_lease_duration (default 30)
    "lease_expired_reads",  # "Potentially invalid KV blocks" error lines
)

ROLES = ("prefill", "decode", "single")

Value = int | float | str | bool


@dataclass(frozen=True)
class Fact:
    value: Value
    where: str


@dataclass(frozen=True)
class FileFacts:
    path: str
    format: str  # sglang-log | sglang-server-info | sglang-metrics | env-file | vllm-*
    engine: str  # sglang | vllm
    facts: Mapping[str, Fact] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.facts) - set(FIELDS)
        if unknown:
            raise ValueError(f"parser reported unknown facts: {sorted(unknown)}")
