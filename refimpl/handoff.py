"""The engine's handoff driver: one guard (``can``) and one effect (``do``) per event.

Each event of ``spec/handoff.md`` is a real engine operation (real KV, real bytes copied,
real paged decode); the switches select the upstream behaviour (cited inline). ``Cluster``
is the public face, ``enabled.py`` the one enumeration of enabled events, ``radix.py``
decode's radix cache events.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvproof.refimpl.decode import Aux, DecodeNode, DecodeReq
from kvproof.refimpl.events import Event
from kvproof.refimpl.prefill import PrefillNode, PrefillReq
from kvproof.refimpl.radix import RadixEvents
from kvproof.refimpl.router import Request
from kvproof.refimpl.tokenizer import PLACEHOLDER_TOKEN
from kvproof.refimpl.transfer import TransferEngine
from kvproof.spec.variant import Switches


class Handoff(RadixEvents):
    def __init__(
        self, switches: Switches, prefill: PrefillNode, decode: DecodeNode, transfer: TransferEngine
    ) -> None:
        self.sw = switches
        self.push = switches.transfer_mode == "push"
        self.prefill = prefill
        self.decode = decode
        self.transfer = transfer
        self.requests: list[Request] = []
        self.p: list[PrefillReq] = []
        self.d: list[DecodeReq] = []
        # Requests that may still have an event (ascending rid): the enumeration and
        # settle() walk these only. A request leaves for good once it can never move again.
        self._live: dict[int, None] = {}
        self._known = 0  # requests already entered in _live
        # (rid, decode page) -> chunk index the posted write should carry (for the recorder)
        self._meant: dict[tuple[int, int], int] = {}

    # -- helpers ---------------------------------------------------------------------------
    def sender_pages(self, r: int) -> int:
        """Pages the sender writes: its prompt's (1 for a placeholder) less decode's hit."""
        return self.prefill.pages_for(self.p[r]) - self.d[r].hit_pages

    def _source_index(self, r: int, index: int) -> int:
        """Prefill's block for the sender's ``index``-th destination. With a prefix hit
        decode has fewer blocks (num_local < num_remote): ``remote_trim = tail`` sends the
        blocks decode lacks (vLLM ``_apply_prefix_caching``: ``remote[-num_local:]``);
        ``head`` sends the first ones (NIXL push before #48758): the wrong chunks."""
        if self.sw.remote_trim == "tail":
            return index + self.d[r].hit_pages
        return index

    def targets(self, r: int) -> list[int]:
        """Destination pages the sender writes, in position order: source page i goes to
        the i-th index it was given (SGLang sends ``kv_indices[:len(prefill_pages)]``)."""
        dst = self.p[r].dst if self.push else self.d[r].table
        return dst[: self.sender_pages(r)]

    def _inflight(self, r: int) -> bool:
        return any(t.rid == r for t in self.transfer.in_flight.values())

    def _all_posted(self, r: int) -> bool:
        return all(page in self.p[r].posted for page in self.targets(r))

    def _sync(self) -> None:
        """Enter requests appended since the last call (``Cluster.submit``) as live."""
        for r in range(self._known, len(self.requests)):
            self._live[r] = None
        self._known = len(self.requests)

    def live(self) -> Iterable[int]:
        """The requests that may still have an event, ascending (a live view: do not
        apply events while iterating it)."""
        self._sync()
        return self._live.keys()

    def _retired(self, r: int) -> bool:
        """``r`` can never have an event again: decode is done, prefill neither waits nor
        sends nor holds pages, no write of it is in flight and no lease can expire. Every
        one of these is final (phases only move forward, ``src_ok`` only goes off)."""
        req, p, d = self.requests[r], self.p[r], self.d[r]
        return (
            req.arrived
            and d.phase == "done"
            and p.phase not in ("waiting", "active")
            and not p.held
            and not (not self.push and self.sw.prefill_hold == "lease" and p.src_ok)
            and not self._inflight(r)
        )

    def _free_decode(self, r: int) -> None:
        self.decode.release(self.d[r])
        self.d[r].phase = "done"

    def settle(self) -> None:
        """P's own bookkeeping after each event: release drained requests, start prefills
        whose bootstrap completed. Not protocol events: the model sees decode's pages.

        Prefill computes a request only once decode has sent (``send``): push waits for the
        indices, pull computes at ``send``. SGLang's ``PrefillBootstrapQueue`` holds a
        request "whose bootstrap (handshake and preallocation) has not finished" until
        ``KVPoll`` says ``WaitingForInput`` (``pop_bootstrapped``); computing earlier is
        opt-in (``optimistic_prefill_attempts``, 0). Computing eagerly filled P's pool with
        prompts decode had no pages for: a burst deadlocked (tests/refimpl/test_burst.py).
        """
        self._sync()
        for r in list(self._live):
            p = self.p[r]
            if p.held and not self._inflight(r):
                if self.push:
                    finished = p.phase in ("sent", "stopped")
                else:  # until_read: P keeps its blocks until decode's reads completed
                    finished = self.requests[r].poll in ("success", "failed")
                    finished = finished or self.d[r].phase in ("running", "draining", "done")
                if finished:
                    self.prefill.release(p)
        for r in list(self._live):
            p = self.p[r]
            if p.phase == "active" and not p.computed and self.prefill.can_compute(p):
                self._compute(p)
            if self._retired(r):
                del self._live[r]

    def _compute(self, p: PrefillReq) -> None:
        if p.computed:
            return
        self.prefill.compute(p)
        if not p.src_ok:  # the lease expired before the prefill ran: the blocks go at once
            self.prefill.release(p, reused=True)

    # -- guards ----------------------------------------------------------------------------
    def can(self, ev: Event) -> bool:
        r = ev.rid
        if not 0 <= r < len(self.requests):
            return False
        req = self.requests[r]
        if ev.name == "arrive":
            return not req.arrived
        if not req.arrived:
            return False
        p, d = self.p[r], self.d[r]
        sw = self.sw
        match ev.name:
            case "alloc":
                return (
                    d.phase == "queued"
                    and len(d.table) < d.reserve
                    and ev.page is not None
                    and self.decode.alloc.is_free(ev.page)
                )
            case "send":
                ready = (self.push or self.prefill.can_compute(p)) and self.head_ready(r)
                return d.phase == "queued" and len(d.table) == d.reserve and ready
            case "post":
                if self.push:
                    ok = p.phase == "active" and self.prefill.can_compute(p)
                else:  # pull: decode reads prefill's blocks until the transfer concluded
                    # (success or failed): a NIXL read is never started after that.
                    ok = d.phase == "transfer" and p.computed and req.poll == "transferring"
                return ok and ev.page in self.targets(r) and ev.page not in p.posted
            case "land":
                return (r, ev.page) in self.transfer.in_flight
            case "p_abort":
                return self.push and p.phase in ("waiting", "active") and not p.pend
            case "done":
                if self.push:
                    ok = p.phase == "active"
                else:
                    ok = d.phase == "transfer" and req.poll == "transferring"
                return ok and self._all_posted(r) and not self._inflight(r)
            case "fail":
                if self.push:
                    return p.phase == "active"
                return d.phase == "transfer" and req.poll == "transferring"
            case "commit":
                return d.phase == "transfer" and req.poll == "success"
            case "step":
                return d.phase == "running" and self.decode.can_step(d)
            case "finish":
                return d.phase == "running"
            case "abort":
                return d.phase in ("queued", "transfer", "running")
            case "abort_seen":
                return self.push and req.abort_msg and p.phase in ("waiting", "active")
            case "ack":
                # abort_ack = before_drain: NIXL ACKs a cleared room early (#35360 review).
                drained = d.phase == "draining" and (
                    sw.abort_ack == "before_drain" or not self._inflight(r)
                )
                return drained and (not self.push or p.phase not in ("waiting", "active"))
            case "timeout":
                return sw.release == "deferred_timeout" and d.phase == "draining"
            case "expire":
                if self.push:  # dynamo #826: P frees its sources between two writes
                    early = sw.prefill_hold == "early_free" and p.phase == "active"
                    return early and p.src_ok and not self._inflight(r)
                return sw.prefill_hold == "lease" and p.src_ok
            case "give_up":  # waiting timeout / heartbeat-declared death, no ABORT sent
                return sw.decode_gives_up != "never" and d.phase == "transfer"
            case "insert" | "share":
                return self.can_radix(ev)
        return False

    # -- effects ---------------------------------------------------------------------------
    def do(self, ev: Event) -> None:
        getattr(self, f"_do_{ev.name}")(ev)
        self.settle()

    def _do_arrive(self, ev: Event) -> None:
        r, sw = ev.rid, self.sw
        req, p, d = self.requests[r], self.p[r], self.d[r]
        req.arrived = True
        n = len(req.prompt)
        req.over_p = not self.prefill.limits.admits(n)
        req.over_d = not self.decode.limits.admits(n)
        # SGLang #38935/#38704: a pending reject is retired at the disaggregation admission
        # queue on both sides, before any allocation. #30233: the queues read finished(),
        # not to_finish, so without the fix the request went on.
        if req.over_d or (req.over_p and sw.honor_pending_reject):
            d.phase, p.phase, req.resp = "done", "stopped", "rejected"
            side = "decode" if req.over_d else "prefill"
            limit = (self.decode if req.over_d else self.prefill).limits.max_req_input_len
            req.reason = f"input of {n} tokens exceeds {side}'s max_req_input_len {limit}"
            return
        d.phase, p.phase = "queued", "waiting"
        p.src_ok = True
        if sw.decode_prefix_cache and self.decode.prefix_pages:  # issue 12 item 3
            ps = self.decode.page_size
            cached = min(self.decode.prefix_pages, (n - 1) // ps)  # one page stays to send
            if cached and sw.radix_cache != "off":  # the head comes from the tree (share)
                self.decode.expect_head(d, cached)
            elif cached:
                self.decode.load_prefix(d, list(req.prompt[: cached * ps]))
            req.hit = bool(cached)
        if req.over_p:
            p.pend = True  # to_finish = FINISH_ABORT(400)
            req.reason = f"pending reject: {n} tokens over prefill's limit"
            if sw.placeholder_prompt:  # "set it to one token to skip the long prefill"
                p.tokens = [PLACEHOLDER_TOKEN]

    def _do_alloc(self, ev: Event) -> None:
        assert ev.page is not None
        self.decode.alloc_page(self.d[ev.rid], ev.page)

    def _do_send(self, ev: Event) -> None:
        r = ev.rid
        p, d = self.p[r], self.d[r]
        d.phase = "transfer"
        self.requests[r].poll = "transferring"
        p.dst = list(d.table)  # P's copy: never updated when D frees and reallocates
        p.tag = self.decode.tags.tag_of(r)  # the reservation's owner tag, with the indices
        if p.phase == "waiting":
            p.phase = "active"
        if not self.push:
            self._compute(p)

    def _do_post(self, ev: Event) -> None:
        r, p = ev.rid, self.p[ev.rid]
        assert ev.page is not None
        self._compute(p)
        index = self.targets(r).index(ev.page)
        self.transfer.post(r, ev.page, p.pages[self._source_index(r, index)], self.prefill.pool)
        p.posted.add(ev.page)
        # the chunk this write should carry (decode's table comes after the prefix cache's)
        self._meant[(r, ev.page)] = index + self.d[r].hit_pages

    def _do_land(self, ev: Event) -> None:
        r, page = ev.rid, ev.page
        assert page is not None
        t = self.transfer.land(r, page, self.prefill.pool, self.decode)
        self.landed_radix(page)
        # issue 12 item 3: the chunk the write was meant to carry, for the recorder only
        meant, pages, ps = self._meant.pop((r, page)), self.p[r].pages, self.decode.page_size
        wanted = max(0, min(ps, self.d[r].prompt_len - meant * ps))  # slots decode reads there
        self.decode.record.positioned(page, t.src in pages[meant : meant + 1], wanted)

    def _do_p_abort(self, ev: Event) -> None:
        self.p[ev.rid].pend = True
        self.requests[ev.rid].reason = "aborted at prefill mid-transfer"

    def _do_done(self, ev: Event) -> None:
        r = ev.rid
        req, p, d = self.requests[r], self.p[r], self.d[r]
        if self.push:
            p.phase = "sent"
        assert p.first_token is not None
        d.aux = Aux(p.first_token, self.sender_pages(r), p.checksum, len(p.tokens))
        # KVPoll: Failed always overwrites; before #36612 Success overwrote the pending abort.
        abort_wins = p.pend and not self.sw.success_overwrites_abort
        req.poll = "failed" if req.poll == "failed" or abort_wins else "success"

    def _do_fail(self, ev: Event) -> None:
        r = ev.rid
        req, p = self.requests[r], self.p[r]
        req.reason = "KV transfer failed"
        if self.push:
            p.phase = "stopped"  # later chunks are skipped
        if self.sw.failure_status == "success" and req.poll != "failed":
            # vLLM #52234 (HMA path skips _invalid_block_ids), dynamo #15079, LMCache #2972:
            # the failure reaches decode as a completed transfer; the aux row carries what
            # prefill had (its first token; no length or checksum check runs on it here).
            token = p.first_token if p.first_token is not None else 0
            self.d[r].aux = Aux(token, len(p.posted), p.checksum)
            req.poll = "success"
            return
        req.poll = "failed"

    def _do_commit(self, ev: Event) -> None:
        r, sw = ev.rid, self.sw
        req, d = self.requests[r], self.d[r]
        assert d.aux is not None
        reason = ""
        if sw.written_length_check and d.aux.pages_written != len(d.table):
            reason = f"short transfer: {d.aux.pages_written} of {len(d.table)} pages written"
        elif sw.written_length_check and d.aux.tokens_written != d.prompt_len:
            reason = f"short transfer: {d.aux.tokens_written} of {d.prompt_len} tokens written"
        elif self._checksum_compared(d.aux.checksum) and self.decode.checksum(d) != d.aux.checksum:
            reason = "transfer checksum mismatch (Adler-32)"  # SGLang #39500
        if reason:
            req.resp, req.reason = "error", reason
            self._free_decode(r)
            return
        d.tokens = [d.aux.first_token]
        if self._read(r):
            req.resp = "ok"
            d.phase = "running"

    def _checksum_compared(self, received: tuple[int, ...]) -> bool:
        """SGLang #39500: decode compares only with the option on, and skips the comparison
        when the checksum it received is 0 (a prefill without the option sends 0)."""
        return self.sw.decode_checksums and any(received)

    def _read(self, r: int) -> bool:
        """A decode step reading every page in the table; False if the tag guard tripped."""
        req, d = self.requests[r], self.d[r]
        token = self.decode.step(d, guarded=self.sw.page_tags)
        if token is None:
            req.guard_trips += 1
            req.resp, req.reason = "error", "page tag mismatch: a page is not this request's"
            self._free_decode(r)
            return False
        d.tokens.append(token)
        self.decode.record_read(d)
        return True

    def _do_step(self, ev: Event) -> None:
        self._read(ev.rid)

    def _do_finish(self, ev: Event) -> None:
        self._free_decode(ev.rid)

    def _do_abort(self, ev: Event) -> None:
        r, sw = ev.rid, self.sw
        req, d = self.requests[r], self.d[r]
        # Before send P has no indices; once running every write has landed.
        safe_now = d.phase in ("queued", "running")
        if sw.release == "immediate":  # #24527/#35049: freed while writes are in flight
            free_now = True
        elif sw.failed_means_drained:  # Mooncake: FAILED does not mean drained
            free_now = safe_now or req.poll == "failed"
        else:
            free_now = safe_now
        if not req.reason:
            req.reason = "client disconnected"
        req.poll = "failed"
        req.abort_msg = True
        if req.resp == "none":
            req.resp = "aborted"
        if free_now:
            self._free_decode(r)
        else:
            d.phase = "draining"

    def _do_abort_seen(self, ev: Event) -> None:
        self.p[ev.rid].phase = "stopped"

    def _do_ack(self, ev: Event) -> None:
        self._free_decode(ev.rid)  # SGLang #38961: every prefill rank ACKed the drain

    def _do_timeout(self, ev: Event) -> None:
        self._free_decode(ev.rid)

    def _do_give_up(self, ev: Event) -> None:
        r, req = ev.rid, self.requests[ev.rid]
        req.poll = "failed"
        req.reason = "decode gave up waiting for the KV (no ABORT sent to prefill)"
        if req.resp == "none":
            req.resp = "error"
        if self.sw.decode_gives_up == "free_at_once":
            self._free_decode(r)
        else:  # held like a deferred abort: freed on ACK or the release timeout
            self.d[r].phase = "draining"

    def _do_expire(self, ev: Event) -> None:
        p = self.p[ev.rid]
        p.src_ok = False  # vLLM #52234: the blocks go back to P and other traffic reuses them
        self.prefill.release(p, reused=True)
