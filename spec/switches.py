"""The behaviour switches of a variant: each names a real design choice of a real engine.

The enumerated ones are ``Literal`` types, so mypy holds every comparison and assignment
(``sw.release == "deferred"`` is an error: no such value), and ``CHOICES``, what a variant
file may say (checked by ``spec/variant.py``), is read off those types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args, get_origin, get_type_hints

# The enumerated switches' values, as types: mypy holds every comparison and assignment to
# them, and ``CHOICES`` (what a variant file may say) is read off them.
TransferMode = Literal["push", "pull"]
DecodeReserve = Literal["own_prompt", "plus_one"]
Release = Literal["immediate", "deferred_ack", "deferred_timeout"]
PrefillHold = Literal["until_read", "lease", "early_free"]
# -- issue 12 (variants): switches of the widened catalog ----------------------------------
TransferChecksum = Literal["off", "both", "prefill_only", "decode_only"]
FailureStatus = Literal["failed", "success", "silent"]
AbortAck = Literal["after_drain", "before_drain"]
DecodeGivesUp = Literal["never", "free_at_once", "hold"]
DecodeAdmission = Literal["retire_reject", "queue_reject"]
# -- position and sharing (issue 12 item 3) --
RemoteTrim = Literal["tail", "head"]
RadixCache = Literal["off", "refcounted", "free_while_cached"]
AckGeneration = Literal["checked", "unchecked"]
PrefillReject = Literal["send_stub", "retire_after_forward"]


@dataclass(frozen=True)
class Switches:
    """Behaviour switches: each names a real design choice of a real engine.

    The comments cite where the behaviour comes from; ``spec/handoff.md`` says what each
    switch changes in the protocol.
    """

    # push: prefill writes into decode's pages (SGLang + Mooncake);
    # pull: decode reads prefill's blocks (vLLM NixlConnector).
    transfer_mode: TransferMode
    # The disaggregation admission queues retire a request whose reject is pending
    # (``to_finish`` set) before any allocation or transfer (SGLang #38935, #38704).
    # False reproduces #30233: the queues only tested ``finished()``.
    honor_pending_reject: bool
    # A prompt that prefill rejects is replaced by a 1-token placeholder (#30233), so
    # prefill writes one page whatever decode reserved.
    placeholder_prompt: bool
    # How decode sizes its reservation: from its own copy of the prompt, or one page more
    # than prefill writes (vLLM PR #50558).
    decode_reserve: DecodeReserve
    # Decode's commit compares the length prefill wrote with its reservation.
    written_length_check: bool
    # Prefill's Success reaches decode after a prefill-side abort: 200 instead of 400.
    # Fixed by SGLang #36612 ("a Success requested after a failure ... is downgraded").
    success_overwrites_abort: bool
    # When decode frees an aborted or failed request's pages: at once (before SGLang's
    # deferred release, #24527/#35049), after every prefill rank ACKs that its writes
    # drained, or on a timeout without the ACK (the remaining gap).
    release: Release
    # Decode treats a Failed transfer as drained and frees at once (Mooncake: a batch can
    # report FAILED while sibling writes still land).
    failed_means_drained: bool
    # Per-transfer Adler-32 over the request's pages (SGLang #39500, server arg
    # --disaggregation-enable-kv-checksum, read by each role): "both" checks at commit.
    # Decode skips the comparison when the checksum it received is 0, so "prefill_only"
    # (decode never compares) and "decode_only" (prefill sends 0) silently check nothing.
    transfer_checksum: TransferChecksum
    # Per-page owner tags checked before every decode read (Cloudflare's prototype).
    page_tags: bool
    # Prefill holds its blocks until decode's read completes, or frees them when a lease
    # expires even if decode still holds a reference (pull: vLLM #52234; push: vLLM NIXL
    # push_worker.py::get_transfer_results reports an expired request finished_sending
    # with its WRITE in flight). "early_free" (push): prefill frees its source blocks
    # between its writes (dynamo #826, MLA path).
    prefill_hold: PrefillHold
    # -- position and sharing (issue 12 item 3) --
    # Decode's prefix cache matches the head of a prompt and decode receives only the rest
    # (vLLM prefix caching on D with NIXL; SGLang ``disaggregation_decode_enable_radix_cache``,
    # #19746): decode has fewer pages than prefill computed (num_local < num_remote).
    decode_prefix_cache: bool
    # Which of the sender's blocks go to decode's local ones when decode has fewer: the
    # last (tail: what decode lacks; vLLM ``_apply_prefix_caching``) or the first (head:
    # NIXL push before #48758, so local block i gets remote block i, the wrong position).
    remote_trim: RemoteTrim
    # -- issue 12 (variants) ----------------------------------------------------------------
    # What decode sees when a transfer fails: "failed", or "success" (vLLM #52234's HMA
    # path skips _invalid_block_ids; dynamo #15079 marks a failed KVBM transfer loaded;
    # LMCache #2972 review: completion notified after a failed NIXL write), or "silent":
    # decode is never told (vLLM NIXL push, #50754: a failed WRITE leaves D waiting).
    failure_status: FailureStatus
    # When prefill sends ABORT_ACK: after its writes drained, or before (NIXL ACKs a
    # cleared room early, #35360 review "this is a real hole"; #38961 points 1-3).
    abort_ack: AbortAck
    # Decode giving up on a transfer on its own (waiting timeout, heartbeats declaring
    # prefill dead) without ABORT to prefill: never, freeing at once (older receivers), or
    # holding the pages like a deferred abort (until ACK or the release timeout).
    decode_gives_up: DecodeGivesUp
    # -- sharing (issue 12 items 3-4) -- a default, so earlier variant files need no edit.
    # Decode's radix cache (SGLang ``--disaggregation-decode-enable-radix-cache``, #19746)
    # shares read-only prefix pages among requests, locked by reference counts
    # (``_match_prefix_and_lock``: ``inc_lock_ref`` on the matched node). "off": the prefix
    # hit stays abstract (``decode_prefix_cache`` alone); "refcounted": a page inserted into
    # the tree leaves its request's table and returns to the pool only when evicted with no
    # lock (#38355's fix); "free_while_cached": the request's release still frees a page it
    # inserted while the tree maps it (#38319: ``cache_finished_req(is_insert=False)``).
    radix_cache: RadixCache = "off"
    # Push: decode's abort reaches prefill (SGLang ``receiver.abort()``: prefill stops and
    # ACKs the drain). False (vLLM NIXL push, 0.34.0): decode tells prefill nothing and
    # frees an aborted request's pages only on its finished_recving, i.e. once prefill's
    # writes completed (v1/core/sched/scheduler.py::finish_requests, #32255).
    abort_notifies_prefill: bool = True
    # What decode's admission queue does with a prompt over decode's own limit, whose
    # reject is pending (``to_finish``, the 1-token stub): "retire_reject" retires it at the
    # door with its 400, before any reservation (SGLang 0.5.21+:
    # ``disaggregation/decode.py::DecodePreallocQueue.add`` -> ``is_unadmitted_reject`` ->
    # ``Scheduler.retire_unadmitted_request``, #38935); "queue_reject" queues the stub like
    # any request (0.5.15-0.5.20: ``DecodePreallocQueue.add`` reads only the KV capacity and
    # ``pop_preallocated`` retires only a ``finished_reason`` abort), so decode reserves for
    # it, takes its transfer and runs it until ``Req.update_finish_state`` moves the pending
    # reject to ``finished_reason`` and the client gets the 400.
    decode_admission: DecodeAdmission = "retire_reject"
    # Push with ABORT_ACKs: whether decode tells a late ACK of an earlier abort of the same
    # room (a room reused, the network late or duplicating) from its current abort's.
    # "checked" (SGLang 0.5.22+): each arming of a room is a new generation, the ABORT and
    # its ACK carry it, and an ACK of another is dropped
    # (common/conn.py::CommonKVManager.register_deferred_abort_room, note_abort_ack: "The
    # generation rejects an old request's late ACK after room reuse"). "unchecked" (0.5.19-
    # 0.5.21): the ACK names only the room and the rank, and any ACK while the room is held
    # counts (common/conn.py::CommonKVManager.note_abort_ack(bootstrap_room, prefill_rank)).
    ack_generation: AckGeneration = "checked"
    # Prefill's queued stub of an over-long prompt (``honor_pending_reject`` off), after its
    # forward: "send_stub" sends its one page and concludes Success (0.5.15-0.5.19
    # ``disaggregation/prefill.py::process_batch_result_disagg_prefill`` reads no abort);
    # "retire_after_forward" (0.5.20, #36988 "Retire aborted disaggregated prefill
    # results"): the same function sees ``is_aborted(req)`` (its ``to_finish``) and calls
    # ``_retire_aborted_prefill_result``, whose ``sender.abort()`` records the failure on
    # prefill only: nothing is written or sent, and decode waits on its transfer.
    prefill_reject: PrefillReject = "send_stub"

    @property
    def prefill_checksums(self) -> bool:
        """Prefill computes the transfer checksum (#39500: the option on its side)."""
        return self.transfer_checksum in ("both", "prefill_only")

    @property
    def decode_checksums(self) -> bool:
        """Decode compares the transfer checksum at commit (the option on its side)."""
        return self.transfer_checksum in ("both", "decode_only")


# Allowed values of the enumerated switches; booleans are checked by type.
CHOICES: dict[str, tuple[str, ...]] = {
    name: get_args(hint)
    for name, hint in get_type_hints(Switches).items()
    if get_origin(hint) is Literal
}
