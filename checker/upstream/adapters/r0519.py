"""SGLang 0.5.19 and 0.5.20: the queue takes its gloo group and TP rank as arguments.

``disaggregation/decode.py::DecodeTransferQueue.__init__(gloo_group,
req_to_metadata_buffer_idx_allocator, tp_rank, metadata_buffers, scheduler, tree_cache)``;
``common/conn.py::CommonKVManager.note_abort_ack(bootstrap_room, prefill_rank)``; the manager
enables deferred release from the env switch alone.
"""

from __future__ import annotations

from typing import Any

from kvproof.checker.upstream.adapters.adapter import Adapter

DECODE = "sglang.srt.disaggregation.decode"
COMMON = "sglang.srt.disaggregation.common.conn"
SCHED = "sglang.srt.managers.scheduler"

SHARED: tuple[tuple[str, tuple[str, ...]], ...] = (
    (f"{DECODE}:DecodeTransferQueue.pop_transferred", ("self", "rids_to_check")),
    (f"{DECODE}:DecodeTransferQueue._defer_release", ("self", "decode_req")),
    (f"{DECODE}:DecodeTransferQueue.resolve_deferred_releases", ("self",)),
    (f"{COMMON}:CommonKVReceiver.__init__", ("self", "mgr", "bootstrap_addr", "bootstrap_room")),
    (f"{COMMON}:CommonKVReceiver.abort", ("self",)),
    (
        f"{COMMON}:CommonKVManager.is_abort_release_safe",
        ("self", "bootstrap_room", "required_acks"),
    ),
    (f"{SCHED}:Scheduler.abort_request", ("self", "recv_req")),
)


ALLOCATOR = "req_to_metadata_buffer_idx_allocator"
HOSTS = ("metadata_buffers", "scheduler", "tree_cache")


def queue_init(*params: str) -> tuple[str, tuple[str, ...]]:
    """The ``DecodeTransferQueue.__init__`` signature an adapter constructs it with."""
    return (f"{DECODE}:DecodeTransferQueue.__init__", ("self", *params))


ACK_WITHOUT_GENERATION = (
    f"{COMMON}:CommonKVManager.note_abort_ack",
    ("self", "bootstrap_room", "prefill_rank"),
)


def _queue(decode: Any, alloc: Any, buffers: Any, scheduler: Any, tree: Any) -> Any:
    return decode.DecodeTransferQueue(None, alloc, 0, buffers, scheduler, tree)


def _ack(common: Any, mgr: Any, recv: Any, rank: int) -> None:
    # ``mooncake/conn.py``'s decode thread parses ``[b"ABORT_ACK", room, rank]`` inline
    # (no function of its own) and calls the manager's ``note_abort_ack``.
    mgr.note_abort_ack(recv.bootstrap_room, rank)


# A late ACK of an earlier abort of the room reads the same on the wire: ``[b"ABORT_ACK",
# room, rank]`` names no abort (``common/conn.py::CommonKVManager.note_abort_ack
# (bootstrap_room, prefill_rank)`` records any while the room is held).
_stale_ack = _ack


ADAPTER = Adapter(
    name="0.5.19-0.5.20",
    signatures=(
        queue_init("gloo_group", ALLOCATOR, "tp_rank", *HOSTS),
        ACK_WITHOUT_GENERATION,
        *SHARED,
    ),
    make_queue=_queue,
    note_ack=_ack,
    note_stale_ack=_stale_ack,
    deferred=lambda env, cls: env,
)
