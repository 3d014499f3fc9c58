"""kvproof's KV manager, receiver wiring and prefill peer: what the walk controls.

The manager is an instance of the release's own transfer-backend manager class
(``mooncake/conn.py::MooncakeKVManager`` by default) built without its ``__init__`` (which
opens sockets and registers GPU memory): its status table, failure records and deferred-abort
ACK accounting (``update_status``, ``check_status``, ``record_failure``,
``register_deferred_abort_room``, ``note_abort_ack``, ``is_abort_release_safe``) are the
release's code, running on fields this module sets. The receiver is the release's receiver
class, constructed by the release's ``CommonKVReceiver.__init__``; only its socket to
prefill is ours (``Peer``), so an ABORT it sends is recorded, not sent.

What prefill sends decode (its status) is decided by prefill's own code (``status.py``);
the ABORT_ACK is the walk's, delivered through the manager's own entry points.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

# Two prefill ranks (attention TP 2): decode's receiver knows both, sends each an ABORT,
# and a deferred hold needs one ABORT_ACK per rank (``decode.py::_defer_release``:
# ``required_acks = len(kv_receiver.bootstrap_infos)``).
PREFILL_RANKS = (0, 1)


@dataclass
class Peer:
    """The prefill side as the receiver sees it: the ABORTs it was sent, and their frames
    per prefill rank (what ``status.PrefillRanks.abort_seen`` hands each rank)."""

    aborts: list[int] = field(default_factory=list)  # rooms
    frames: dict[int, dict[int, list[Any]]] = field(default_factory=dict)  # room -> rank

    def send_multipart(self, frames: Any) -> None:
        # The release's ``_send_abort_notification`` builds the frames (its
        # ``bootstrap_room`` and target rank are set just before, by ``socket_for``).
        self.aborts.append(self._room)
        self.frames.setdefault(self._room, {}).setdefault(self._rank, []).append(list(frames))

    def socket_for(self, room: int, info: Any = None) -> Any:
        self._room = room
        port = info.get("rank_port") if isinstance(info, dict) else None
        self._rank = PREFILL_RANKS[port - 17001] if port else PREFILL_RANKS[0]
        return self, nullcontext()


def make_manager(manager_cls: type, *, deferred: bool, waiting_timeout: float) -> Any:
    """The release's manager class, with the fields its decision methods read.

    ``deferred`` is ``envs.SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE`` as the
    release reads it, and in 0.5.22+ also the class's ``supports_deferred_decode_kv_release``
    (``common/conn.py::CommonKVManager.__init__``)."""
    cls: Any = type("KvproofManager", (manager_cls,), {})
    cls.__abstractmethods__ = frozenset()
    mgr: Any = object.__new__(cls)
    fields: dict[str, Any] = {
        "request_status": {},
        "failure_records": {},
        "failure_lock": threading.Lock(),
        "connection_lock": threading.Lock(),
        "connection_pool": {},
        "addr_to_rooms_tracker": defaultdict(set),
        "required_prefill_response_num_table": {},
        "prefill_response_tracker": defaultdict(set),
        "_deferred_abort_ack_tracker": {},
        "_deferred_abort_generation": 0,
        "_deferred_ack_targets": {},
        "_deferred_ack_poisoned_rooms": set(),
        "_staging_outstanding": {},
        "_staging_handler": None,
        "deferred_bootstrap": None,
        "defer_decode_allocation": False,
        "enable_deferred_decode_kv_release": deferred,
        "waiting_timeout": waiting_timeout,
        "enable_trace": False,
        "local_ip": "127.0.0.1",
        "rank_port": 17000,
    }
    for name, value in fields.items():
        object.__setattr__(mgr, name, value)
    return mgr


def make_receiver(receiver_cls: Any, common_cls: Any, mgr: Any, room: int, peer: Peer) -> Any:
    """The release's receiver, through ``CommonKVReceiver.__init__`` (its backend
    ``__init__`` connects to the bootstrap server; the common one only registers the room)."""
    recv: Any = object.__new__(receiver_cls)
    common_cls.__init__(recv, mgr, "prefill:8998", room)
    recv._connect_to_bootstrap_server = lambda info: peer.socket_for(room, info)
    recv.trace_ctx = _NoTrace()
    return recv


def late_acks(note: Callable[[Any, Any, Any, int], None], common: Any, mgr: Any, recv: Any) -> None:
    """``stale_ack``: a late ABORT_ACK of an earlier abort of the receiver's room, from
    every prefill rank, as the release's wire carries it (``note``: the adapter's)."""
    for rank in PREFILL_RANKS:
        note(common, mgr, recv, rank)


def handshake(recv: Any) -> None:
    """The receiver learned its prefill ranks, in the prealloc queue before any page is
    reserved (``CommonKVReceiver.init`` -> ``_setup_bootstrap_infos``; 0.5.15-0.5.19 in
    the receiver's ``__init__``): from here an abort can reach prefill."""
    recv.bootstrap_infos = [
        {"rank_ip": "prefill", "rank_port": 17001 + rank} for rank in PREFILL_RANKS
    ]
    recv.prefill_dp_rank = 0
    # ``CommonKVReceiver.init``: every prefill rank must report Success (``apply_prefill_status``).
    recv.kv_mgr.required_prefill_response_num_table[recv.bootstrap_room] = len(PREFILL_RANKS)


def publish(recv: Any, status_waiting: Any, now: float) -> None:
    """Decode sent its page indices (``send_metadata`` in each backend's ``init``): the
    waiting-timeout clock starts."""
    if getattr(recv, "bootstrap_infos", None) is None:
        handshake(recv)
    recv.init_time = now
    recv.kv_mgr.update_status(recv.bootstrap_room, status_waiting)


class _NoTrace:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None
