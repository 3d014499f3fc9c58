"""SGLang 0.5.22 and 0.5.23: parallel state from ``get_parallel()``
(``decode.py::DecodeTransferQueue.__init__(req_to_metadata_buffer_idx_allocator,
metadata_buffers, scheduler, tree_cache)``), and ABORT_ACKs carry the generation the
receiver armed (``common/conn.py::CommonKVManager.note_abort_ack(bootstrap_room,
prefill_rank, generation)``, ``CommonKVReceiver._abort_generation``). 0.5.23 tears a slot
down with ``MetadataBuffers.clear_slot``, which the stand-in buffers have.
"""

from __future__ import annotations

from typing import Any

from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.checker.upstream.adapters.r0519 import ALLOCATOR, COMMON, HOSTS, SHARED, queue_init
from kvproof.checker.upstream.adapters.r0521 import supports


def _queue(decode: Any, alloc: Any, buffers: Any, scheduler: Any, tree: Any) -> Any:
    return decode.DecodeTransferQueue(alloc, buffers, scheduler, tree)


def _ack(common: Any, mgr: Any, recv: Any, rank: int) -> None:
    # Prefill echoes the generation of the ABORT it drained: the frames are built by the
    # release's ``AbortAck.to_zmq`` and parsed by its ``handle_abort_ack_message``.
    ack = common.AbortAck(
        room=recv.bootstrap_room, prefill_rank=rank, generation=recv._abort_generation
    )
    mgr.handle_abort_ack_message(ack.to_zmq())


def _stale_ack(common: Any, mgr: Any, recv: Any, rank: int) -> None:
    # A late ACK of an earlier abort of this room carries that abort's generation, and the
    # manager's counter only grows (``register_deferred_abort_room``): one below the
    # room's, or, before the room is armed, the last one the manager issued (0: none yet,
    # a decode restarted since). Parsed by the release's ``handle_abort_ack_message``.
    armed = recv._abort_generation
    earlier = armed - 1 if armed is not None else mgr._deferred_abort_generation
    ack = common.AbortAck(room=recv.bootstrap_room, prefill_rank=rank, generation=earlier)
    mgr.handle_abort_ack_message(ack.to_zmq())


ADAPTER = Adapter(
    name="0.5.22-0.5.23",
    signatures=(
        queue_init(ALLOCATOR, *HOSTS),
        (
            f"{COMMON}:CommonKVManager.note_abort_ack",
            ("self", "bootstrap_room", "prefill_rank", "generation"),
        ),
        *SHARED,
    ),
    make_queue=_queue,
    note_ack=_ack,
    note_stale_ack=_stale_ack,
    deferred=supports,
)
