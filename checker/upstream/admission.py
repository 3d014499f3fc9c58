"""Decode's admission of an arriving request, asked of the release's code.

The real path, for one request: ``managers/utils.py::validate_input_length`` checks the
prompt against decode's own limit; ``managers/schedule_batch.py::Req.set_finish_with_abort``
swaps an over-long prompt for the 1-token stub and sets ``to_finish``;
``managers/scheduler.py::Scheduler._add_request_to_queue`` (decode mode) hands it to
``disaggregation/decode.py::DecodePreallocQueue.add``. From 0.5.21 ``add`` retires a request
whose reject is pending (``disaggregation/utils.py::is_unadmitted_reject`` ->
``Scheduler.retire_unadmitted_request``: the client gets its 400, nothing is created); in
0.5.15-0.5.20 it reads only the KV capacity (``_check_if_req_exceed_kv_capacity``) and
queues the stub like any request (``_create_receiver_and_enqueue``, then
``_resolve_prefill_dp_rank`` and the receiver's ``init``).

Each object is the release's class built without its ``__init__`` (``scheduler.py``'s
``bare_scheduler``: every field its class body assigns a permissive stand-in, then the ones
admission reads): the request (``Req``), its KV record (``ReqKvInfo`` where the release has
one) and the queue (``DecodePreallocQueue``). At the edges: the receiver class
``get_kv_class`` returns (the harness's, over the release's ``CommonKVReceiver``), the
receiver's ``init`` (the bootstrap handshake: a socket), and the prefill the bootstrap server
knows (one, data-parallel size 1).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.upstream import wire
from kvproof.checker.upstream.intake import FITS, LIMIT, OVER, PAGE_SIZE, fresh_fields
from kvproof.checker.upstream.reserve import release_function
from kvproof.checker.upstream.scheduler import bare_scheduler
from kvproof.checker.upstream.stubs import Stub

DECODE = "sglang.srt.disaggregation.decode"
SCHED = "sglang.srt.managers.scheduler"
BATCH = "sglang.srt.managers.schedule_batch"
MUTILS = "sglang.srt.managers.utils"
DUTILS = "sglang.srt.disaggregation.utils"

# What decode's admission did with a request (``Harness.admission``, compared as
# ``RequestView.admission``): retired at the door, or queued for pre-allocation.
RETIRED, QUEUED = "retired", "queued"


class PrefillInfoTable(dict[str, Any]):
    """``CommonKVManager.prefill_info_table``: the bootstrap server's answer for the one
    prefill every request names (data-parallel size 1, so ``_resolve_prefill_dp_rank``
    takes its fast path to rank 0 and no query goes out)."""

    INFO = SimpleNamespace(dp_size=1, follow_bootstrap_room=True)

    def get(self, key: Any, default: Any = None) -> Any:
        return self.INFO


class KVAllocator:
    """``mem_cache/allocator``'s ``BaseTokenToKVPoolAllocator`` as admission asks it: a
    plain pool (no SWA, no unified byte budget, so ``prealloc_ceiling_fits`` is the base
    class's None: the queue's token capacity is the only bound), never full."""

    page_size = PAGE_SIZE

    def prealloc_ceiling_fits(self, full_tokens: int, swa_tokens: int) -> bool | None:
        return None

    def prealloc_fits_assumes_reclaim(self) -> bool:
        return False

    def available_size(self) -> int:
        return 1 << 30


def receivers(receiver_cls: type, common_cls: type, peer: wire.Peer) -> Callable[..., Any]:
    """The receiver class ``get_kv_class`` returns: the release's receiver over its
    ``CommonKVReceiver.__init__`` (``wire.py``). Its ``init`` starts the bootstrap handshake
    over a socket (the edge: the walk's ``send`` completes it)."""

    def build(mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> Any:
        recv = wire.make_receiver(receiver_cls, common_cls, mgr, bootstrap_room, peer)
        recv.init = _handshake_started
        return recv

    return build


def _handshake_started(*args: Any, **kwargs: Any) -> None:
    return None


def prealloc_queue(
    mods: dict[str, ModuleType],
    scheduler: Any,
    kv_manager: Any,
    transfer_queue: Any,
    receiver: Callable[..., Any],
    disagg: Any,
) -> Any:
    """The release's ``DecodePreallocQueue`` without its ``__init__`` (which builds the KV
    manager over GPU buffers), its queues empty. ``receiver(mgr=, bootstrap_addr=,
    bootstrap_room=)`` builds the receiver ``get_kv_class`` would return; ``disagg`` is
    the run's ServerArgs (``num_reserved_decode_tokens``: 512 by default,
    ``arg_groups/fields/disagg.py``)."""
    decode: Any = mods[DECODE]  # the release's module, patched: foreign
    decode.get_kv_class = lambda backend, kind: receiver
    # ``utils/common.py`` is a stand-in module: its page arithmetic, the release's own.
    utils = Path(str(decode.__file__)).parents[1] / "utils" / "common.py"
    if utils.is_file() and "def ceil_align(" in utils.read_text(encoding="utf-8"):
        align = release_function(utils, "ceil_align")
        align.__globals__["ceil_div"] = release_function(utils, "ceil_div")
        decode.ceil_align = align
    kv_manager.prefill_info_table = PrefillInfoTable()
    fields = dict(
        queue=[],
        retracted_queue=[],
        pending_reqs=[],
        held_rebootstrap_reqs=[],
        scheduler=scheduler,
        kv_manager=kv_manager,
        transfer_queue=transfer_queue,
        transfer_backend=mods[DUTILS].TransferBackend.MOONCAKE,
        max_total_num_tokens=1 << 30,  # the KV pool's capacity check passes
        num_reserved_decode_tokens=int(getattr(disagg, "num_reserved_decode_tokens", 512)),
        token_to_kv_pool_allocator=KVAllocator(),
        token_to_kv_pool=SimpleNamespace(page_size=PAGE_SIZE),
        tp_rank=0,
        pp_rank=0,
        pp_size=1,
        gloo_group=None,
        enable_staging=False,
        _num_published_destinations=0,
    )
    return bare_scheduler(decode.DecodePreallocQueue, fields)


def arrival_req(mods: dict[str, ModuleType], r: int, over_decode: bool) -> Any:
    """The release's ``Req`` for request ``r`` as decode's tokenizer hands it over, after
    decode's own input check: over decode's limit, the stub with ``to_finish`` set."""
    req = bare_scheduler(mods[BATCH].Req, _req_fields(mods, r, OVER if over_decode else FITS))
    msg = mods[MUTILS].validate_input_length(req, LIMIT, False)
    if msg:
        mods[BATCH].Req.set_finish_with_abort(req, msg)
    return req


def admit(mods: dict[str, ModuleType], scheduler: Any, r: int, over_decode: bool) -> Any:
    """Request ``r`` arrives at decode (``arrival_req``) and ``Scheduler.
    _add_request_to_queue`` in decode mode runs real: the ``DecodeRequest`` the release's
    ``add`` queued for it, or None (retired: no queue holds it, the client has its answer)."""
    req = arrival_req(mods, r, over_decode)
    mods[SCHED].Scheduler._add_request_to_queue(scheduler, req)
    queue = scheduler.disagg_decode_prealloc_queue
    return next((e for e in [*queue.queue, *queue.pending_reqs] if e.req is req), None)


def failed_in_prealloc(queue: Any, failed: Any) -> list[int]:
    """The requests whose receiver an abort failed, taken out of the pre-allocation queue
    (a stand-in for ``DecodePreallocQueue.pop_preallocated``'s first pass, which is not
    driven): their reservation goes back."""
    out = [e for e in queue.queue if e.kv_receiver.poll() == failed]
    queue.queue = [e for e in queue.queue if e not in out]
    return [e.req.r for e in out]


def first_step_ends(req: Any) -> bool:
    """The running batch's first step for a request decode committed: a pending reject
    (the stub a ``queue_reject`` release queued) becomes ``finished_reason`` in the
    release's ``Req.update_finish_state``, and the request ends with its 400. Any other
    request's steps are the running batch's (a stand-in: not a decision module)."""
    if req.to_finish is None:
        return False
    req.update_finish_state()
    return bool(req.finished())


def give_row(req: Any, row: int) -> None:
    """What ``DecodePreallocQueue._pre_alloc`` leaves on a request: its ``req_to_token``
    row (on its KV record from 0.5.19, where ``holds_kv`` reads it; on the request
    before)."""
    if hasattr(req.kv, "req_pool_idx"):
        req.kv.req_pool_idx = row
    req.req_pool_idx = row


def _req_fields(mods: dict[str, ModuleType], r: int, tokens: int) -> dict[str, Any]:
    """The fields decode's admission and the queues read: a fresh request, holding
    nothing, not retracted (``r`` is kvproof's index, read by the recorders)."""
    kv_cls = getattr(mods[BATCH], "ReqKvInfo", None)  # 0.5.16+: the request's KV record
    kv: Any = None
    if isinstance(kv_cls, type) and not issubclass(kv_cls, Stub):
        # 0.5.16-0.5.18 declare some lengths without a default: a fresh request's are 0.
        params = inspect.signature(kv_cls).parameters.values()
        kv = kv_cls(**{q.name: 0 for q in params if q.default is q.empty})
    if kv is None:
        kv = SimpleNamespace(req_pool_idx=None, kv_committed_len=0, kv_allocated_len=0)
    # Where the record has no such field (a property in 0.5.19+, absent before): nothing held.
    for name, value in dict(holds_kv=False, holds_mamba=False, retraction_backup=None).items():
        if not hasattr(kv, name):
            with contextlib.suppress(AttributeError):  # a slotted record (0.5.16-0.5.18)
                setattr(kv, name, value)
    return dict(
        **fresh_fields(f"req-{r}", tokens, 1000 + r),
        r=r,
        output_ids=[],
        finished_output=None,
        bootstrap_port=8998,
        lora_id=None,
        priority=None,
        sampling_params=SimpleNamespace(max_new_tokens=16),
        kv=kv,
        req_pool_idx=r,  # 0.5.15-0.5.18 keep it on the request
        time_stats=Stub(),  # timestamps and tracing: nothing decides on them
    )
