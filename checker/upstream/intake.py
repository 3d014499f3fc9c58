"""Prefill's intake of an over-long prompt, asked of the release's code.

The real path, for one request: ``managers/utils.py::validate_input_length`` decides it is
too long; ``managers/schedule_batch.py::Req.set_finish_with_abort`` swaps the prompt for the
1-token stub and sets ``to_finish``; ``managers/scheduler.py::Scheduler._add_request_to_queue``
(prefill mode) hands it to ``disaggregation/prefill.py::PrefillBootstrapQueue.add``, which in
0.5.21+ retires it (``is_unadmitted_reject``, ``scheduler.retire_unadmitted_request``) and in
0.5.19/0.5.20 creates its sender and queues it. The glue between them is
``Scheduler.handle_generate_request``'s three lines (validate, abort, add), the same in every
release; the request is a stand-in carrying the fields these functions read.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

SCHED = "sglang.srt.managers.scheduler"
BATCH = "sglang.srt.managers.schedule_batch"
MUTILS = "sglang.srt.managers.utils"
PREFILL = "sglang.srt.disaggregation.prefill"
DUTILS = "sglang.srt.disaggregation.utils"
LIMIT = 32  # max_req_input_len; an over-long prompt has LIMIT + 8 tokens


@dataclass(frozen=True)
class Intake:
    retired: bool  # retired at intake: no sender, no queue entry
    queued_tokens: int | None  # the prompt length prefill queued it with (1: the stub)


def intake(mods: dict[str, ModuleType], over: bool) -> Intake:
    req = _req(mods[BATCH].Req, LIMIT + 8 if over else LIMIT // 2)
    retired: list[Any] = []
    queue = object.__new__(mods[PREFILL].PrefillBootstrapQueue)
    queue.queue = []
    queue.scheduler = SimpleNamespace(retire_unadmitted_request=retired.append)
    queue.create_sender = lambda r, heads: True  # the KV sender: a transport, not a decision
    sched = SimpleNamespace(
        disaggregation_mode=mods[DUTILS].DisaggregationMode.PREFILL,
        disagg_prefill_bootstrap_queue=queue,
        model_config=SimpleNamespace(num_key_value_heads=8),
        _set_or_validate_priority=lambda r: True,
        _prefetch_kvcache=lambda r: None,
        enable_priority_scheduling=False,
    )
    msg = mods[MUTILS].validate_input_length(req, LIMIT, False)
    if msg:
        mods[BATCH].Req.set_finish_with_abort(req, msg)
    mods[SCHED].Scheduler._add_request_to_queue(sched, req)
    queued = len(req.origin_input_ids) if req in queue.queue else None
    return Intake(bool(retired), queued)


def _req(req_cls: type, tokens: int) -> Any:
    """The release's ``Req`` class, built without its constructor (tokenizer, sampling
    params...): the fields ``set_finish_with_abort`` writes and ``is_unadmitted_reject``
    reads (a fresh request: nothing held, not retracted); its own methods stay real."""
    req = object.__new__(req_cls)
    fields = dict(
        rid="req-intake",
        origin_input_ids=array("q", range(tokens)),
        multimodal_inputs=None,
        session=None,
        grammar=None,
        return_logprob=False,
        logprob_start_len=-1,
        to_finish=None,
        finished_reason=None,
        is_retracted=False,
        metadata_buffer_index=-1,
        kv=SimpleNamespace(holds_kv=False, holds_mamba=False, retraction_backup=None),
        time_stats=SimpleNamespace(
            set_prefill_bootstrap_queue_entry_time=lambda: None,
            trace_ctx=SimpleNamespace(abort=lambda **k: None),
        ),
        priority=None,
    )
    for name, value in fields.items():
        object.__setattr__(req, name, value)
    return req
