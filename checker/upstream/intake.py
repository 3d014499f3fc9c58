"""Prefill's intake and bootstrap of one prompt, asked of the release's code: whether it is
retired at intake, the prompt it is queued with, and the pages prefill will send for it.

The real path, for one request: ``managers/utils.py::validate_input_length`` decides it is
too long; ``managers/schedule_batch.py::Req.set_finish_with_abort`` swaps the prompt for the
1-token stub and sets ``to_finish``; ``managers/scheduler.py::Scheduler._add_request_to_queue``
(prefill mode) hands it to ``disaggregation/prefill.py::PrefillBootstrapQueue.add``, which in
0.5.21+ retires it (``is_unadmitted_reject``, ``scheduler.retire_unadmitted_request``) and in
0.5.15-0.5.20 creates its sender (``create_sender``) and queues it. Then the handshake:
``PrefillBootstrapQueue.pop_bootstrapped`` polls the sender (WaitingForInput: decode sent its
page indices), ``finalize_bootstrap`` counts the pages to send (``_num_pages_to_send`` in
0.5.21+, inline before) and gives them to the sender's ``init``. The sender class comes from
the release's ``get_kv_class`` call, answered at the edge with ``Sender`` (a transport: it
records ``init``); the chunks prefill then sends go through the release's own sender
(``chunks.py``); the glue between the steps is ``Scheduler.handle_generate_request``'s three
lines (validate, abort, add), the same in every release.

The prompt sizes are the incident's: a 40,000-token prompt over prefill's 32,768 limit, pages
of 64 tokens (and a 1,000-token prompt that fits).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.upstream.chunks import Chunks, send_chunks
from kvproof.checker.upstream.scheduler import bare_scheduler

SCHED = "sglang.srt.managers.scheduler"
BATCH = "sglang.srt.managers.schedule_batch"
MUTILS = "sglang.srt.managers.utils"
PREFILL = "sglang.srt.disaggregation.prefill"
DUTILS = "sglang.srt.disaggregation.utils"
BASE = "sglang.srt.disaggregation.base.conn"
LIMIT = 32_768  # prefill's max_req_input_len
OVER, FITS = 40_000, 1_025  # prompt lengths, in tokens (1,025: 16 pages and one token)
PAGE_SIZE = 64


@dataclass(frozen=True)
class Intake:
    retired: bool  # retired at intake: no sender, no queue entry
    queued_tokens: int | None  # the prompt length prefill queued it with (1: the stub)
    sent_pages: int | None = None  # finalize_bootstrap's count to the sender's init
    prompt_tokens: int = 0
    chunks: Chunks | None = None  # what the sender then queued, chunk by chunk (chunks.py)


class Sender:
    """The KV sender ``get_kv_class(backend, KVClassType.SENDER)`` returns: records the page
    count prefill initialises it with. The handshake is done (WaitingForInput)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.num_pages: int | None = None
        self.waiting: Any = None

    def init(self, num_kv_indices: int, aux_index: int | None = None) -> None:
        self.num_pages = num_kv_indices

    def pop_decode_prefix_len(self) -> int:
        return 0  # no decode-side prefix hit

    def poll(self) -> Any:
        return self.waiting


def intake(mods: dict[str, ModuleType], over: bool) -> Intake:
    tokens = OVER if over else FITS
    req = _req(mods[BATCH].Req, tokens)
    retired: list[Any] = []
    queue = _bootstrap_queue(mods, retired)
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
    if req not in queue.queue:
        return Intake(bool(retired), None, None, tokens)
    queued = len(req.origin_input_ids)
    queue.pop_bootstrapped()
    pages = req.disagg_kv_sender.num_pages
    chunks = send_chunks(mods, req, pages, PAGE_SIZE) if pages is not None else None
    return Intake(bool(retired), queued, pages, tokens, chunks)


def stub_req(mods: dict[str, ModuleType]) -> Any:
    """The over-long prompt as prefill's scheduler queues it: the release's ``Req`` after
    ``validate_input_length`` and ``Req.set_finish_with_abort`` (``to_finish`` set)."""
    req = _req(mods[BATCH].Req, OVER)
    msg = mods[MUTILS].validate_input_length(req, LIMIT, False)
    if msg:
        mods[BATCH].Req.set_finish_with_abort(req, msg)
    return req


def _bootstrap_queue(mods: dict[str, ModuleType], retired: list[Any]) -> Any:
    """The release's ``PrefillBootstrapQueue`` without its ``__init__`` (which builds the KV
    manager over GPU buffers): one rank, one free metadata slot, pages of ``PAGE_SIZE``."""
    prefill: Any = mods[PREFILL]  # the release's module, patched: foreign
    waiting = mods[BASE].KVPoll.WaitingForInput

    def sender_class(backend: Any, kind: Any) -> Any:
        return type("Sender", (Sender,), {"__init__": _waiting_init(waiting)})

    prefill.get_kv_class = sender_class
    # One rank: the all-reduce over the attention groups is each sender's own poll.
    prefill.poll_and_all_reduce_attn_cp_tp_group = lambda pollers, *a, **k: [
        p.poll() for p in pollers
    ]
    queue = object.__new__(prefill.PrefillBootstrapQueue)
    fields = dict(
        queue=[],
        pp_size=1,
        pp_rank=0,
        tp_rank=0,
        bootstrap_port=8998,
        transfer_backend=mods[DUTILS].TransferBackend.MOONCAKE,
        kv_manager=None,
        # 0.5.15-0.5.18 read the page size from the queue's pool, later from the allocator
        token_to_kv_pool=SimpleNamespace(page_size=PAGE_SIZE),
        max_total_num_tokens=1 << 30,  # the KV pool's capacity check passes (0.5.15-0.5.22)
        max_input_len=1 << 30,  # 0.5.23's name for it
        req_to_metadata_buffer_idx_allocator=SimpleNamespace(
            available_size=lambda: 1, alloc=lambda: 0
        ),
        # The release's Scheduler (prefill mode), without its __init__.
        scheduler=bare_scheduler(
            mods[SCHED].Scheduler,
            dict(
                retire_unadmitted_request=retired.append,
                token_to_kv_pool_allocator=SimpleNamespace(page_size=PAGE_SIZE),
                processed_tokens_counter=0,
                tree_cache=None,
                output_streamer=SimpleNamespace(stream_output=lambda *a, **k: None),
            ),
        ),
    )
    for name, value in fields.items():
        setattr(queue, name, value)
    return queue


def _waiting_init(waiting: Any) -> Any:
    def init(self: Sender, *args: Any, **kwargs: Any) -> None:
        Sender.__init__(self)
        self.waiting = waiting

    return init


def fresh_fields(rid: str, tokens: int, room: int) -> dict[str, Any]:
    """A fresh request's fields both sides' queues read (a ``Req`` built without its
    constructor): a prompt of ``tokens`` tokens, nothing pending, not retracted."""
    return dict(
        rid=rid,
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
        bootstrap_host="prefill",
        bootstrap_room=room,
        disagg_prefill_dp_rank=None,
    )


def _req(req_cls: Any, tokens: int) -> Any:
    """The release's ``Req`` class, built without its constructor (tokenizer, sampling
    params...): the fields intake and bootstrap write and read (a fresh request: nothing
    held, not retracted); its own methods stay real."""
    req: Any = object.__new__(req_cls)
    fields = dict(
        **fresh_fields("req-intake", tokens, 1000),
        prefill_attempt_count=0,
        sampling_params=SimpleNamespace(max_new_tokens=16),
        kv=SimpleNamespace(holds_kv=False, holds_mamba=False, retraction_backup=None),
        time_stats=SimpleNamespace(
            set_prefill_bootstrap_queue_entry_time=lambda: None,
            set_bootstrap_done_time=lambda: None,
            set_wait_queue_entry_time=lambda: None,
            trace_ctx=SimpleNamespace(abort=lambda **k: None),
        ),
        priority=None,
    )
    for name, value in fields.items():
        object.__setattr__(req, name, value)
    return req
