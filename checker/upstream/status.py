"""Prefill's side of a room's status, run through the release's own code: prefill's senders
and managers decide the status they hold and the one they send, and decode's manager decides
what it holds on receipt. The walk only chooses the environment: when a message arrives
(decode's metadata, decode's ABORT, prefill's own abort) and whether a transfer fails.

Two prefill ranks (``wire.PREFILL_RANKS``), each an instance of the release's manager class
built without its ``__init__`` (``wire.make_manager``), with one sender each: the release's
``MooncakeKVSender`` through its own ``__init__`` (``CommonKVSender.__init__``: the room
starts Bootstrapping). Per model step:

- ``arrive``: each sender's ``__init__`` (Bootstrapping);
- ``send``: decode's metadata reached prefill, ``update_status(room, WaitingForInput)``
  (the last line of ``start_prefill_thread``'s bootstrap thread);
- ``p_abort``: ``sender.abort()`` (``Scheduler.abort_request``, prefill branch);
- ``abort_seen``: the ABORT frames decode's receiver sent each rank, to that rank's
  ``_handle_abort_notification`` (0.5.22+; before, the bootstrap thread's inline lines);
- ``done``/``fail``: each rank's ``conclude_transfer(Success)``/``conclude_failure`` (0.5.20+;
  ``conclude_transfer`` downgrades a Success itself), or 0.5.15-0.5.19 ``transfer_worker``'s
  ``update_status`` + ``sync_status_to_decode_endpoint``; then decode's thread takes each
  message: ``parse_kv_status_message`` + ``apply_prefill_status`` (0.5.20+) or the same
  lines of ``start_decode_thread``.

The frames prefill sends are the release's own (``_send_multipart_locked`` is the socket
edge). A decode abort followed by prefill's ``done`` is a late Success reaching a room decode
already failed: decode's own code decides what it does with it.
"""

from __future__ import annotations

from inspect import signature
from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.upstream.forward import forward_stub
from kvproof.checker.upstream.stubs import Stub
from kvproof.checker.upstream.wire import PREFILL_RANKS, make_manager

COMMON = "sglang.srt.disaggregation.common.conn"
DECODE_ENDPOINT = ("decode", 17000)  # decode's rank_port (wire.make_manager)
READY = "Failed due to the transfer, as Mooncake reported it"


class PrefillRanks:
    """Prefill's managers and senders for one walk; ``outbox`` holds what they sent decode."""

    def __init__(
        self, mods: dict[str, ModuleType], backend: type, sender_cls: type, deferred: bool
    ) -> None:
        self.mods = mods
        self.kvpoll = mods["sglang.srt.disaggregation.base.conn"].KVPoll
        self.sender_cls: Any = sender_cls  # the release's class: foreign
        self.outbox: list[list[bytes]] = []
        self.ranks = [self._manager(backend, rank, deferred) for rank in PREFILL_RANKS]
        self.senders: dict[int, list[Any]] = {}  # room -> one sender per rank
        # Prefill's parallel layout as its senders read it: one DP rank.
        parallel = SimpleNamespace(
            num_dp_ranks=1,
            dp_size=1,
            enable_dp_attention=False,
            load_balance_method="round_robin",
            enable_dsa_cache_layer_split=False,
        )
        common: Any = mods[COMMON]  # the release's module, patched: foreign
        if defines(common, "get_parallel"):
            common.get_parallel = lambda: parallel

    def _manager(self, backend: type, rank: int, deferred: bool) -> Any:
        # Both roles read the deferred-release switch (prefill: its ABORT handling).
        mgr = make_manager(backend, deferred=deferred, waiting_timeout=300.0)
        outbox = self.outbox

        def send(endpoint: str, parts: list[bytes], is_ipv6: bool = False) -> None:
            outbox.append(list(parts))  # the socket: the frames go to decode's thread

        fields = {
            # ``_prefill_unique_rank``: attention TP rank ``rank``, no PP or CP
            "attn_tp_rank": rank,
            "attn_cp_rank": 0,
            "attn_cp_size": 1,
            "pp_rank": 0,
            "pp_size": 1,
            "is_dummy_cp_rank": False,
            "enable_all_cp_ranks_for_transfer": False,
            "transfer_infos": {},
            "req_to_decode_prefix_len": {},
            "bootstrap_timeout": 300.0,
            "server_args": SimpleNamespace(dp_size=1),  # 0.5.15-0.5.17 read the DP size here
            "_send_multipart_locked": send,
            "_connect": lambda endpoint, is_ipv6=False: SimpleNamespace(
                send_multipart=lambda parts: outbox.append(list(parts))
            ),
        }
        for name, value in fields.items():
            object.__setattr__(mgr, name, value)
        return mgr

    # -- the steps -----------------------------------------------------------------------
    def arrive(self, room: int) -> None:
        # 0.5.15-0.5.21 also take the decode TP ranks and the PP rank (one of each).
        params = signature(self.sender_cls.__init__).parameters
        extra = [[0], 0] if "dest_tp_ranks" in params else []
        self.senders[room] = [
            self.sender_cls(mgr, "prefill:8998", room, *extra) for mgr in self.ranks
        ]

    def bootstrapped(self, room: int) -> None:
        """Decode's metadata reached every rank (the bootstrap thread's last line)."""
        if room in self.senders:
            for mgr in self.ranks:
                mgr.update_status(room, self.kvpoll.WaitingForInput)

    def abort(self, room: int) -> None:
        for sender in self.senders.get(room, ()):
            sender.abort()

    def forward_stub(self, room: int) -> None:
        """The over-long prompt's stub ran its forward once bootstrapped: what the
        release does with the result on every rank (``forward.py``)."""
        forward_stub(self.mods, self.senders.get(room, ()))

    def abort_seen(self, room: int, frames: dict[int, list[list[bytes]]]) -> None:
        """The ABORTs decode sent each rank for this room, handled by that rank."""
        if room not in self.senders:
            return
        for rank, mgr in zip(PREFILL_RANKS, self.ranks, strict=True):
            for msg in frames.get(rank, ()):
                if defines(mgr, "_handle_abort_notification"):
                    mgr._handle_abort_notification(msg)
                else:  # 0.5.15-0.5.21: the bootstrap thread's inline lines
                    self._legacy_abort(mgr, room)

    def _legacy_abort(self, mgr: Any, room: int) -> None:
        # ``start_prefill_thread``'s ABORT branch: a room not yet Success is marked Failed.
        active = room in mgr.request_status and mgr.check_status(room) != self.kvpoll.Success
        if active:
            mgr.update_status(room, self.kvpoll.Failed)

    def conclude(self, room: int, failed: bool) -> None:
        """Every rank's transfer worker ends the room: what each then sends decode."""
        if room not in self.senders:
            return
        kvpoll = self.kvpoll
        for rank, mgr in zip(PREFILL_RANKS, self.ranks, strict=True):
            if defines(mgr, "conclude_transfer"):  # 0.5.20+
                if failed:
                    mgr.conclude_failure(
                        bootstrap_room=room, failure_reason=READY, targets=[DECODE_ENDPOINT]
                    )
                else:
                    mgr.conclude_transfer(
                        bootstrap_room=room, status=kvpoll.Success, targets=[DECODE_ENDPOINT]
                    )
                continue
            # 0.5.15-0.5.19 ``transfer_worker``: the room's status, then the same to decode.
            status = kvpoll.Failed if failed else kvpoll.Success
            mgr.update_status(room, status)
            mgr.sync_status_to_decode_endpoint(*DECODE_ENDPOINT, room, status, rank)

    def deliver(self, decode_mgr: Any) -> None:
        """Decode's thread takes what prefill sent, in order (``start_decode_thread``)."""
        sent, self.outbox[:] = list(self.outbox), []
        ack_tag = getattr(self.mods[COMMON], "ABORT_ACK_TAG", b"ABORT_ACK")
        for msg in sent:
            if msg and msg[0] in (ack_tag, b"ABORT_ACK"):
                # A drain ACK: the walk's ``ack`` step delivers it (drive.py ``_ack``).
                continue
            if defines(decode_mgr, "apply_prefill_status"):  # 0.5.20+
                parsed = decode_mgr.parse_kv_status_message(msg)
                if parsed is None:
                    continue
                room, status, rank, reason = parsed
                decode_mgr.apply_prefill_status(
                    bootstrap_room=room, status=status, prefill_rank=rank, failure_reason=reason
                )
            else:
                self._legacy_receive(decode_mgr, msg)

    def _legacy_receive(self, mgr: Any, msg: list[bytes]) -> None:
        # 0.5.15-0.5.19 ``start_decode_thread``: Success once every expected rank reported
        # it; Failed at once, with its record.
        room, status, rank = (int(x.decode("ascii")) for x in msg)
        if status == self.kvpoll.Success:
            if room in mgr.request_status:
                mgr.prefill_response_tracker[room].add(rank)
                expected = mgr.required_prefill_response_num_table[room]
                if len(mgr.prefill_response_tracker[room]) == expected:
                    mgr.update_status(room, self.kvpoll.Success)
        elif status == self.kvpoll.Failed:
            mgr.record_failure(room, "Failed to get kvcache from prefill instance")
            mgr.update_status(room, status)

    # -- what prefill holds --------------------------------------------------------------
    def status(self, room: int) -> str | None:
        """The status prefill's ranks hold for the room ("pending", "success", "failed"),
        or "rank 0 X, rank 1 Y" when they differ; None before its senders exist."""
        if room not in self.senders:
            return None
        seen = [self._word(mgr.request_status.get(room)) for mgr in self.ranks]
        if len(set(seen)) == 1:
            return seen[0]
        return ", ".join(f"rank {r} {w}" for r, w in zip(PREFILL_RANKS, seen, strict=True))

    def _word(self, status: Any) -> str:
        if status is None:
            return "cleared"
        if status == self.kvpoll.Success:
            return "success"
        return "failed" if status == self.kvpoll.Failed else "pending"


def defines(obj: Any, name: str) -> bool:
    """The release's own code defines ``name`` (a stand-in mixin or module answers every
    attribute, ``stubs.py``, so ``hasattr`` cannot tell)."""
    if isinstance(obj, ModuleType):
        return name in vars(obj)
    # ``Stub in k.__mro__``, not ``issubclass``: an ABC's subclass check walks its registry.
    return any(name in vars(k) for k in type(obj).__mro__ if Stub not in k.__mro__)


class PrefillSteps:
    """The harness's prefill steps (mixed into ``drive.Harness``, which sets the fields)."""

    prefill: PrefillRanks
    requests: Any
    over_long: Any
    peer: Any

    def prefill_arrives(self, r: int) -> None:
        # An over-long prompt that prefill's intake retires gets no sender (``intake.py``).
        retired = self.over_long is not None and self.over_long.retired
        over = r < len(self.requests) and self.requests[r].over_prefill  # () in scripted walks
        if not (over and retired):
            self.prefill.arrive(1000 + r)

    def prefill_forward(self, r: int) -> None:
        # Only the over-long prompt's stub has a pending reject for the forward to see.
        if r < len(self.requests) and self.requests[r].over_prefill:
            self.prefill.forward_stub(1000 + r)

    def _p_abort(self, r: int) -> None:
        self.prefill.abort(1000 + r)

    def _abort_seen(self, r: int) -> None:
        self.prefill.abort_seen(1000 + r, self.peer.frames.get(1000 + r, {}))
