"""Prefill's forward over an over-long prompt's queued stub, as the release handles its
result: whether the stub is then sent, or retired with nothing sent.

0.5.15-0.5.19 queue the 1-token stub (``intake.py``) and, after its forward,
``disaggregation/prefill.py::SchedulerDisaggregationPrefillMixin.
process_batch_result_disagg_prefill`` sends its one page (``send_kv_chunk``) without
reading its pending reject. 0.5.20 (#36988, "Retire aborted disaggregated prefill results") tests
``disaggregation/utils.py::is_aborted(req)`` there, true for the stub's ``to_finish``, and
calls ``_retire_aborted_prefill_result``: the sender's ``abort()`` records the failure
on prefill, the metadata slot and KV are released, and nothing goes to decode. Both run
real, on each prefill rank's own sender (each rank's scheduler runs the batch). 0.5.21+
retire the prompt at intake: no sender reaches a forward.

Stand-ins: the request's fields after a forward (its KV and metadata slot held), the
scheduler's fields the retire reads, and ``release_kv_cache`` (prefill's KV pool is not
modelled).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.upstream.intake import stub_req
from kvproof.checker.upstream.scheduler import bare_scheduler

PREFILL = "sglang.srt.disaggregation.prefill"
DUTILS = "sglang.srt.disaggregation.utils"
SCHED = "sglang.srt.managers.scheduler"
RETIRE = "_retire_aborted_prefill_result"


def retires_after_forward(mods: dict[str, ModuleType]) -> bool:
    """The release's prefill retires an aborted request's result after its forward."""
    mixin = getattr(mods[PREFILL], "SchedulerDisaggregationPrefillMixin", None)
    return mixin is not None and RETIRE in vars(mixin)


def forward_stub(mods: dict[str, ModuleType], senders: Iterable[Any]) -> bool:
    """The stub's forward result on every rank: True when the release retired it there
    (nothing sent), False when it goes on to be sent (the walk's ``post``/``done``)."""
    if not retires_after_forward(mods):
        return False
    prefill: Any = mods[PREFILL]  # the release's module, patched: foreign
    prefill.release_kv_cache = lambda req, tree_cache, is_insert=True: None
    retire = getattr(prefill.SchedulerDisaggregationPrefillMixin, RETIRE)
    retired = False
    for sender in senders:
        req = stub_req(mods)
        # After its forward: the request holds its KV and its metadata slot.
        object.__setattr__(req, "kv", SimpleNamespace(holds_kv=True, holds_mamba=False))
        object.__setattr__(req, "metadata_buffer_index", 0)
        object.__setattr__(req, "disagg_kv_sender", sender)
        object.__setattr__(req, "pending_bootstrap", False)
        sched = bare_scheduler(
            mods[SCHED].Scheduler,
            dict(
                disagg_prefill_pending_chunk_rids=set(),
                req_to_metadata_buffer_idx_allocator=SimpleNamespace(free=lambda i: None),
                enable_hicache_storage=False,
                tree_cache=None,
            ),
        )
        if mods[DUTILS].is_aborted(req) and retire(sched, req):
            retired = True
    return retired
