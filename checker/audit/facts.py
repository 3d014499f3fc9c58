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
    "deferred_release",  # decode holds aborted pages until prefill ACKs the drain
    "transfer_checksum",  # per-transfer checksum over the request's pages (#39500)
)

ROLES = ("prefill", "decode", "single")


@dataclass(frozen=True)
class Fact:
    value: int | str | bool
    where: str


@dataclass(frozen=True)
class FileFacts:
    path: str
    format: str  # sglang-log | sglang-server-info | vllm-log | vllm-metrics
    engine: str  # sglang | vllm
    facts: Mapping[str, Fact] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.facts) - set(FIELDS)
        if unknown:
            raise ValueError(f"parser reported unknown facts: {sorted(unknown)}")
