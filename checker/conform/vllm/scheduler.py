"""One vLLM engine's scheduler, real: ``v1/core/sched/scheduler.py::Scheduler`` with its
``KVCacheManager``/``BlockPool`` and the NIXL connector's scheduler side (pull:
``nixl/pull_scheduler.py``, push: ``nixl/push_scheduler.py``), built by the release's own
``KVConnectorFactory``. The model runner is stood in by the outputs it would return: one
sampled token per scheduled request, and the worker's ``KVConnectorOutput``.

What stands in, and why it cannot change a decision: the sampling parameters (``SP``: every
field the request reads but the ones set is ``None``, the release's default for a plain
text request) and the grammar engine (``GrammarOff.accept_tokens``: True, what
``v1/structured_output/__init__.py::StructuredOutputManager.accept_tokens`` answers for a
request without structured output).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kvproof.checker.conform.vllm.config import (
    BLOCK_SIZE,
    PROMPT_TOKENS,
    EngineSettings,
    kv_cache_config,
    vllm_config,
)

SCHED = "vllm.v1.core.sched.scheduler"
REQUEST = "vllm.v1.request"
OUTPUTS = "vllm.v1.outputs"


class SP:
    """``SamplingParams`` of a plain text request: unset fields read as ``None``."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class GrammarOff:
    def accept_tokens(self, request: Any, new_token_ids: list[int]) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the grammar engine is not driven ({name})")


class SchedulerSide:
    """A real scheduler and its connector, one engine step at a time."""

    def __init__(self, mods: dict[str, Any], settings: EngineSettings) -> None:
        self.mods = mods
        self.settings = settings
        self.sched = mods[SCHED].Scheduler(
            vllm_config(mods, settings), kv_cache_config(mods), GrammarOff(), BLOCK_SIZE
        )
        self.status_cls = mods[REQUEST].RequestStatus
        self.steps = 0

    @property
    def connector(self) -> Any:
        """The connector's scheduler side (``NixlPullConnectorScheduler`` or push)."""
        return self.sched.connector.connector_scheduler

    def add(self, req_id: str, params: dict[str, Any], max_tokens: int) -> None:
        sp = SP(
            max_tokens=max_tokens,
            extra_args={"kv_transfer_params": params},
            n=1,
            min_tokens=0,
            stop_token_ids=[],
            all_stop_token_ids=set(),
            ignore_eos=True,
        )
        prompt = list(range(1, PROMPT_TOKENS + 1))
        self.sched.add_request(self.mods[REQUEST].Request(req_id, prompt, sp, None))

    def step(self, **kv_output: Any) -> tuple[Any, Any]:
        """``schedule()`` then ``update_from_output`` with one token per scheduled request
        and the worker's ``KVConnectorOutput(**kv_output)`` (none when empty); the
        ``SchedulerOutput`` and the engine-core outputs back."""
        out = self.sched.schedule()
        ids = list(out.num_scheduled_tokens)
        outputs = self.mods[OUTPUTS]
        kvo = outputs.KVConnectorOutput(**kv_output) if kv_output else None
        fields = {f.name for f in dataclasses.fields(outputs.ModelRunnerOutput)}
        # 0.33.0's ModelRunnerOutput also carries req_id_to_index (dropped by 0.34.0).
        index = {"req_id_to_index": {r: i for i, r in enumerate(ids)}}
        mro = outputs.ModelRunnerOutput(
            req_ids=ids,
            sampled_token_ids=[[7] for _ in ids],
            kv_connector_output=kvo,
            **{k: v for k, v in index.items() if k in fields},
        )
        eco = self.sched.update_from_output(out, mro)
        self.steps += 1
        return out, eco

    def abort(self, req_id: str) -> None:
        """``finish_requests`` as the API server calls it on a client disconnect."""
        self.sched.finish_requests(req_id, self.status_cls.FINISHED_ABORTED)

    def blocks(self, req_id: str) -> tuple[int, ...]:
        """The blocks the scheduler still holds for the request (its ``requests`` entry is
        deleted by ``_free_blocks`` when they go back to the pool)."""
        if req_id not in self.sched.requests:
            return ()
        groups = self.sched.kv_cache_manager.get_block_ids(req_id)
        return tuple(b for g in groups for b in g)

    def status(self, req_id: str) -> str | None:
        req = self.sched.requests.get(req_id)
        return None if req is None else req.status.name

    def free_blocks(self) -> int:
        return int(self.sched.kv_cache_manager.block_pool.get_num_free_blocks())
