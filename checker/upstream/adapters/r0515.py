"""SGLang 0.5.15 to 0.5.18: the 0.5.19 signatures without the deferred-release and ACK
machinery.

``disaggregation/decode.py::DecodeTransferQueue`` has no ``_defer_release`` or
``resolve_deferred_releases`` (an abort's pages are freed on the next ``pop_transferred``),
``common/conn.py::CommonKVManager`` has no ``note_abort_ack`` / ``is_abort_release_safe``,
and the decode manager's receiver thread drops prefill's ABORT_ACK
(``mooncake/conn.py::MooncakeKVManager.start_decode_thread``: "TODO(shangming): use this
info to implement the deferred release mechanism if needed"). The queue is built as in
0.5.19 (``__init__(gloo_group, req_to_metadata_buffer_idx_allocator, tp_rank,
metadata_buffers, scheduler, tree_cache)``).
"""

from __future__ import annotations

from typing import Any

from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.checker.upstream.adapters.r0519 import (
    ALLOCATOR,
    COMMON,
    DECODE,
    HOSTS,
    SCHED,
    _queue,
    queue_init,
)

SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    queue_init("gloo_group", ALLOCATOR, "tp_rank", *HOSTS),
    (f"{DECODE}:DecodeTransferQueue.pop_transferred", ("self", "rids_to_check")),
    (f"{COMMON}:CommonKVReceiver.__init__", ("self", "mgr", "bootstrap_addr", "bootstrap_room")),
    (f"{COMMON}:CommonKVReceiver.abort", ("self",)),
    (f"{SCHED}:Scheduler.abort_request", ("self", "recv_req")),
)


def _ack(common: Any, mgr: Any, recv: Any, rank: int) -> None:
    return None  # the decode thread logs the ABORT_ACK and drops it


ADAPTER = Adapter(
    name="0.5.15-0.5.18",
    signatures=SIGNATURES,
    make_queue=_queue,
    note_ack=_ack,
    note_stale_ack=_ack,
    deferred=lambda env, cls: False,  # no deferred release in these releases
    deferred_machinery=False,
)
