"""The configuration one engine runs under: the release's own config dataclasses where the
decision path reads their defaults, plain namespaces for what it reads as facts of the
deployment (the model's length, one GPU, no speculative decoding, no multimodal).

``KVTransferConfig``, ``SchedulerConfig`` and ``CacheConfig`` are the release's classes
(``vllm/config/kv_transfer.py``, ``scheduler.py``, ``cache.py``), so the lease
(``kv_lease_duration``, read by ``nixl/base_scheduler.py::NixlBaseConnectorScheduler.
__init__``), ``kv_load_failure_policy`` and the scheduler's limits are the release's
defaults unless the variant's ``[upstream.env]`` says otherwise. ``KVCacheConfig`` with one
``FullAttentionSpec`` group of ``BLOCKS`` blocks is what the engine core would hand the
scheduler for a one-layer model.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace as NS
from typing import Any

BLOCK_SIZE = 16
BLOCKS = 32
MAX_MODEL_LEN = 4096
# Prompts long enough to pull (nixl/base_scheduler.py: kv_recompute_threshold, 64 tokens).
PROMPT_TOKENS = 4 * BLOCK_SIZE


@dataclass(frozen=True)
class EngineSettings:
    mode: str  # "pull" | "push"
    role: str  # "kv_producer" (prefill) | "kv_consumer" (decode)
    kv_load_failure_policy: str | None = None  # None: the release's default
    extra: tuple[tuple[str, Any], ...] = ()  # kv_connector_extra_config (kv_lease_duration)
    config: tuple[tuple[str, Any], ...] = ()  # release-specific VllmConfig fields (adapter)


def connector_name(mode: str) -> str:
    return "NixlPushConnector" if mode == "push" else "NixlConnector"


def vllm_config(mods: dict[str, Any], s: EngineSettings) -> Any:
    kt, sc, cc = (mods[f"vllm.config.{n}"] for n in ("kv_transfer", "scheduler", "cache"))
    kv = kt.KVTransferConfig(
        kv_connector=connector_name(s.mode),
        kv_role=s.role,
        kv_connector_extra_config=dict(s.extra),
    )
    if s.kv_load_failure_policy is not None:
        kv.kv_load_failure_policy = s.kv_load_failure_policy
    sched = sc.SchedulerConfig(max_model_len=MAX_MODEL_LEN, is_encoder_decoder=False)
    cache = cc.CacheConfig()
    cache.block_size, cache.num_gpu_blocks = BLOCK_SIZE, BLOCKS
    model = NS(
        max_model_len=MAX_MODEL_LEN,
        uses_mrope=False,
        is_encoder_decoder=False,
        runner_type="generate",
        is_diffusion=False,
        supports_multimodal_inputs=False,
        return_sampling_mask=False,
    )
    parallel = NS(
        data_parallel_index=0,
        data_parallel_rank=0,
        data_parallel_size=1,
        decode_context_parallel_size=1,
        prefill_context_parallel_size=1,
        pipeline_parallel_size=1,
        tensor_parallel_size=1,
    )
    observability = NS(
        per_request_spec_decode_metrics=False, kv_cache_metrics=False, enable_mfu_metrics=False
    )
    return NS(
        scheduler_config=sched,
        cache_config=cache,
        model_config=model,
        parallel_config=parallel,
        observability_config=observability,
        kv_transfer_config=kv,
        lora_config=None,
        kv_events_config=None,
        ec_transfer_config=None,
        speculative_config=None,
        is_mm_encoder_only=False,
        max_concurrent_batches=1,
        num_speculative_tokens=0,
        num_lookahead_tokens=0,
        num_prefill_lookahead_tokens=0,
        num_hash_lookahead_tokens=0,
        max_in_flight_tokens=None,
        aux_output_config=NS(enabled=False),
        watermark_config=None,
        ec_manager_config=NS(get_encoder_cache_manager_obj=lambda: None),
        **dict(s.config),
    )


def kv_cache_config(mods: dict[str, Any]) -> Any:
    import torch

    kvi = mods["vllm.v1.kv_cache_interface"]
    spec = kvi.FullAttentionSpec(
        block_size=BLOCK_SIZE, num_kv_heads=1, head_size=8, dtype=torch.float16
    )
    group = kvi.KVCacheGroupSpec(["model.layers.0.self_attn"], spec)
    return kvi.KVCacheConfig(num_blocks=BLOCKS, kv_cache_tensors=[], kv_cache_groups=[group])
