"""Stand-ins for what hosts the release's decode queues: the request, the scheduler, the
metadata buffers and their index allocator, the tree cache.

Each is named after the upstream object it stands in for and carries only the fields the
real decision code reads on the paths conform drives (``decode.py::DecodeTransferQueue``,
``scheduler.py::Scheduler.abort_request``). Releasing pages goes to ``Pages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kvproof.checker.upstream.pages import Pages


class Req:
    """``managers/schedule_batch.py::Req``, the fields the decode queues read."""

    def __init__(self, r: int) -> None:
        self.r = r
        self.rid = f"req-{r}"
        self.bootstrap_room = 1000 + r
        self.req_pool_idx = r  # its row in ReqToTokenPool (scheduler.py)
        # ``Req.kv``: nothing backed up on the host for retraction (``mem_cache/common.py::
        # discard_kv_cache_backup`` runs real and finds nothing to discard).
        self.kv = SimpleNamespace(
            retraction_backup=None, holds_kv=True, holds_mamba=False, req_pool_idx=r
        )
        self.return_logprob = False
        self.finished_reason: Any = None
        self.priority = None
        self.seqlen = 16
        self.time_stats = SimpleNamespace(set_wait_queue_entry_time=lambda: None)

    def finished(self) -> bool:
        return self.finished_reason is not None


@dataclass
class Outcome:
    """What the code decided about requests, beyond pages: aborts and commits."""

    aborted: dict[int, Any] = field(default_factory=dict)  # request -> status code
    committed: set[int] = field(default_factory=set)
    streamed: list[int] = field(default_factory=list)


class MetadataBuffers:
    """``disaggregation/utils.py::MetadataBuffers``: the slot teardown only."""

    def __init__(self, n: int) -> None:
        self.bootstrap_room = [0] * n

    def clear_slot(self, idx: int) -> None:  # 0.5.23
        self.bootstrap_room[idx] = 0


class TreeCache:
    """``mem_cache/base_prefix_cache.py::BasePrefixCache``: no radix cache on decode, so
    the hicache hooks' ``unlock``/``finish`` have nothing to do; a request's pages go back
    through ``cache_finished_req`` (the cache's own free, ``ChunkCache``'s on decode)."""

    def __init__(self, pages: Pages | None = None) -> None:
        self._pages = pages

    def cache_finished_req(self, req: Any, *args: Any, **kwargs: Any) -> None:
        if self._pages is not None:
            self._pages.release(req.r)

    def dec_lock_ref(self, *args: Any, **kwargs: Any) -> None:
        return None

    def unlock(self, lock: Any) -> None:
        return None

    def finish(self, *args: Any) -> None:
        return None


class IndexAllocator:
    """``disaggregation/utils.py::ReqToMetadataIdxAllocator``."""

    def __init__(self) -> None:
        self.freed: list[int] = []

    def free(self, idx: int) -> None:
        self.freed.append(idx)


def patch_decode_module(
    decode: Any, pages: Pages, outcome: Outcome, clock: Any, disagg: Any
) -> None:
    """Replace the decode module's collective and cache calls with the recorders."""

    def release_kv_cache(req: Any, tree_cache: Any, *args: Any, **kwargs: Any) -> None:
        pages.release(req.r)  # mem_cache/common.py::release_kv_cache

    def prepare_abort(req: Any, message: str, status_code: Any = None) -> None:
        outcome.aborted.setdefault(req.r, status_code)  # disaggregation/utils.py
        req.finished_reason = ("abort", status_code, message)

    def poll_and_all_reduce(pollers: Any, group: Any, **kwargs: Any) -> list[Any]:
        return [p.poll() for p in pollers]  # one rank: the reduce is the identity

    def all_reduce_flags(flags: list[int], group: Any = None, op: Any = None) -> list[int]:
        return flags  # 0.5.23 ``disaggregation/utils.py``: single rank, unchanged

    decode.release_kv_cache = release_kv_cache
    decode.all_reduce_flags = all_reduce_flags
    decode.prepare_abort = prepare_abort
    decode.poll_and_all_reduce = poll_and_all_reduce
    decode.time = clock
    decode.get_disagg = lambda: disagg
    decode.get_parallel = lambda: SimpleNamespace(
        tp_rank=0, pp_size=1, attn_tp_group=SimpleNamespace(cpu_group=None)
    )
