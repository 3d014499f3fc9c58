"""The release modules conform loads real, and loading them from one tree."""

from __future__ import annotations

from typing import Any

from kvproof.checker.conform.vllm.clock import TIMED
from kvproof.checker.conform.vllm.loader import Loaded
from kvproof.checker.conform.vllm.scheduler import OUTPUTS, REQUEST, SCHED
from kvproof.checker.conform.vllm.worker import PULL_WORKER, PUSH_WORKER

REAL = (
    "vllm.config.kv_transfer",
    "vllm.config.scheduler",
    "vllm.config.cache",
    "vllm.v1.kv_cache_interface",
    SCHED,
    REQUEST,
    OUTPUTS,
    PULL_WORKER,
    PUSH_WORKER,
    *TIMED,
)


def load(loaded: Loaded) -> dict[str, Any]:
    return {name: loaded.module(name) for name in REAL}
