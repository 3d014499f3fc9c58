"""The prefill -> RDMA -> decode KV handoff (spec/handoff.md), written in the DSL.

One protocol for every variant: each upstream bug is a switch (``spec/variant.py``), read
here with plain Python ``if`` (switches are constants; state is never branched on).

Initial state: every page holds KV of earlier requests outside the instance (pools are
never zeroed), no request has arrived, and each request's prompt may be over prefill's
and/or decode's limit (``over_p``/``over_d`` are free): the model covers every deployment,
including one with a danger window (prefill rejects what decode admits).
"""

from __future__ import annotations

from typing import Any

import kvproof.model.handoff.lease as lease
import kvproof.model.handoff.radix as radix
from kvproof.model.handoff.explain import explain_handoff
from kvproof.model.handoff.invariants import handoff_invariants
from kvproof.model.handoff.kinds import action
from kvproof.model.handoff.liveness import DEATH_VARS, crash, engine_rules, handoff_liveness
from kvproof.model.handoff.stale_ack import has_stale_ack, stale_ack_body
from kvproof.model.handoff.strengthening import strengthening
from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import BOOL, Enum, Protocol, Var
from kvproof.spec.variant import Switches

DPhase = Enum("DPhase", ("idle", "queued", "transfer", "running", "draining", "done"))
PPhase = Enum("PPhase", ("idle", "waiting", "active", "sent", "stopped"))
Poll = Enum("Poll", ("none", "transferring", "success", "failed"))
Resp = Enum("Resp", ("none", "ok", "rejected", "error", "aborted"))

VARS = (
    Var("over_p", ("Req",), BOOL, rigid=True, doc="prompt over prefill's max input length"),
    Var("over_d", ("Req",), BOOL, rigid=True, doc="prompt over decode's max input length"),
    Var("dphase", ("Req",), DPhase, doc="decode-side phase"),
    Var("pphase", ("Req",), PPhase, doc="prefill-side phase"),
    Var("poll", ("Req",), Poll, doc="KVPoll status as decode sees it"),
    Var("resp", ("Req",), Resp, doc="what the client gets"),
    Var("pend", ("Req",), BOOL, doc="prefill has a pending abort (req.to_finish)"),
    Var("abort_msg", ("Req",), BOOL, doc="decode sent ABORT to prefill"),
    Var("src_ok", ("Req",), BOOL, doc="prefill's source KV for the request is still its own"),
    Var("owns", ("Req", "Page"), BOOL, doc="decode page table"),
    Var("dst", ("Req", "Page"), BOOL, doc="the destination pages the sender was given"),
    Var("posted", ("Req", "Page"), BOOL, doc="a transfer into the page was posted"),
    Var("inflight", ("Req", "Page"), BOOL, doc="posted, not yet landed (cannot be cancelled)"),
    Var("holds", ("Page", "Req"), BOOL, doc="the page's bytes are the request's KV"),
    Var("filled", ("Page",), BOOL, doc="a write landed since the page's current allocation"),
    Var("stray", ("Page",), BOOL, ghost=True, doc="a write landed while its writer did not own it"),
    Var("leaked", ("Req",), BOOL, ghost=True, doc="decode read a page not holding its fresh KV"),
    # -- position (issue 12 item 3) ------------------------------------------------------
    # ``holds`` says whose KV a page carries; ``at_pos`` says it is the right chunk of it:
    # in every slot decode reads, the writer's KV for the chunk index that the writer's
    # page table gives the page. A placeholder's page fails it (slot 0 is the placeholder,
    # the rest prefill's leftovers: SGLang ships whole pages, ``item_len`` = page bytes).
    Var("at_pos", ("Page",), BOOL, doc="last write: its writer's KV at its table's chunk"),
    # Decode's prefix cache held the head of the prompt (``decode_prefix_cache``): decode
    # reserves and receives only the rest, so it has fewer pages than prefill computed.
    Var("hit", ("Req",), BOOL, rigid=True, doc="decode's prefix cache matched the prompt's head"),
)


def build_handoff(sw: Switches, *, peer_death: bool = False) -> Protocol:
    """The handoff protocol with the switches of one variant. ``peer_death`` (liveness,
    #29) adds ``crash``: a request's prefill dies (``model/handoff/liveness.py``)."""
    push = sw.transfer_mode == "push"

    def alive(s: Ctx, r: Any) -> Any:
        """The prefill serving ``r`` still takes its steps (always, without ``crash``)."""
        return s.not_(s.p_dead(r)) if peer_death else True

    shared = radix.radix_on(sw)  # decode's radix cache shares head pages (issue 12 item 4)

    def _free_pages_of(s: Ctx, r: Any, when: Any = True) -> None:
        """Release every page of ``r`` (when ``when`` holds), and its locks."""
        s.update("owns", lambda x, q, old: s.ite(s.and_(s.eq(x, r), when), False, old))
        if shared:
            radix.release(s, r, when)

    def placeholder(s: Ctx, r: Any) -> Any:
        # #30233: the pending reject is not honoured and the prompt becomes 1 token.
        if sw.honor_pending_reject or not sw.placeholder_prompt:
            return False
        return s.over_p(r)

    def short(s: Ctx, r: Any) -> Any:
        """The sender writes fewer pages than decode reserved."""
        if sw.decode_reserve == "plus_one":  # vLLM PR #50558
            return True
        return placeholder(s, r)

    def written_own(s: Ctx, r: Any, p: Any) -> Any:
        """r's transfer wrote the page since its allocation (what tags and checksums see)."""
        return s.and_(s.holds(p, r), s.filled(p))

    def fresh_own(s: Ctx, r: Any, p: Any) -> Any:
        return s.and_(written_own(s, r, p), s.at_pos(p))

    def bad(s: Ctx, r: Any) -> Any:
        """Some page in r's table does not hold r's KV, at its position, written in this
        allocation: what isolation forbids decode to read."""
        own = s.exists("Page", lambda p: s.and_(s.owns(r, p), s.not_(fresh_own(s, r, p))))
        return s.or_(own, radix.bad_shared(s, r)) if shared else own

    def foreign(s: Ctx, r: Any) -> Any:
        """Some page in r's table was not written by r since its allocation: what a page
        tag or the transfer checksum detects. Neither sees leftover slots inside a page r
        wrote (the tag is per page; the checksum covers the bytes prefill sent, leftovers
        included), nor a chunk at the wrong position (the bytes are the ones sent)."""
        return s.exists("Page", lambda p: s.and_(s.owns(r, p), s.not_(written_own(s, r, p))))

    def in_place(s: Ctx, r: Any) -> Any:
        """Where r's next landing write stays exact (``at_pos``). A placeholder ships one
        whole prefill page for 1 token: decode reads prefill's leftovers in the others.
        With a prefix hit decode has fewer pages than prefill's blocks; trimming the head
        (vLLM NIXL push before #48758) sends remote block i to local block i, which
        decode reads as chunk i + (cached chunks): every page is at the wrong position."""
        misplaced = s.hit(r) if sw.decode_prefix_cache and sw.remote_trim == "head" else False
        return s.not_(s.or_(placeholder(s, r), misplaced))

    def no_inflight(s: Ctx, r: Any) -> Any:
        return s.forall("Page", lambda p: s.not_(s.inflight(r, p)))

    # -- actions -------------------------------------------------------------------------
    def arrive(s: Ctx, r: Any) -> None:
        s.require(s.eq(s.dphase(r), "idle"))
        # Each side validates independently; with honor_pending_reject a prefill reject is
        # retired at the admission queue on both sides with its 400 (#38935, #38704).
        rej = s.or_(s.over_d(r), s.over_p(r) if sw.honor_pending_reject else False)
        s.set("dphase", (r,), s.ite(rej, "done", "queued"))
        s.set("pphase", (r,), s.ite(rej, "stopped", "waiting"))
        s.set("resp", (r,), s.ite(rej, "rejected", "none"))
        s.set("pend", (r,), False if sw.honor_pending_reject else s.and_(s.over_p(r), s.not_(rej)))
        s.set("src_ok", (r,), s.not_(rej))

    def alloc(s: Ctx, r: Any, p: Any) -> None:
        s.require(s.eq(s.dphase(r), "queued"))
        s.require(s.forall("Req", lambda x: s.not_(s.owns(x, p))))
        if shared:
            s.require(radix.allocatable(s, sw, p))
        s.set("owns", (r, p), True)
        s.set("filled", (p,), False)  # a fresh allocation; the bytes are not cleared
        s.set("at_pos", (p,), False)  # nothing of the new owner's is in it yet

    def send(s: Ctx, r: Any) -> None:
        s.require(s.eq(s.dphase(r), "queued"))
        s.require(s.exists("Page", lambda p: s.owns(r, p)))
        if shared:
            s.require(radix.head_ready(s, r))
        s.set("dphase", (r,), "transfer")
        s.set("poll", (r,), "transferring")
        s.update("dst", lambda x, q, old: s.ite(s.eq(x, r), s.owns(r, q), old))
        s.set("pphase", (r,), s.ite(s.eq(s.pphase(r), "waiting"), "active", s.pphase(r)))

    def post(s: Ctx, r: Any, p: Any) -> None:
        if push:
            s.require(s.eq(s.pphase(r), "active"))
            s.require(alive(s, r))
        else:  # pull: decode reads prefill's blocks until it concludes the transfer
            s.require(s.eq(s.dphase(r), "transfer"))
            s.require(s.eq(s.poll(r), "transferring"))
        s.require(s.dst(r, p))
        s.require(s.not_(s.posted(r, p)))
        if sw.decode_reserve == "plus_one":
            # The sender has one page fewer than decode reserved: some page stays unwritten.
            s.require(
                s.exists(
                    "Page",
                    lambda q: s.and_(s.ne(q, p), s.dst(r, q), s.not_(s.posted(r, q))),
                )
            )
        s.require(s.implies(placeholder(s, r), s.forall("Page", lambda q: s.not_(s.posted(r, q)))))
        s.set("posted", (r, p), True)
        s.set("inflight", (r, p), True)

    def land(s: Ctx, r: Any, p: Any) -> None:
        s.require(s.inflight(r, p))
        s.set("inflight", (r, p), False)
        # Pull mode: after a lease expiry prefill's block holds someone else's KV (#52234).
        s.update(
            "holds",
            lambda q, x, old: s.ite(s.eq(q, p), s.and_(s.eq(x, r), s.src_ok(r)), old),
        )
        s.set("filled", (p,), True)
        s.set("at_pos", (p,), in_place(s, r))
        s.set("stray", (p,), s.or_(s.stray(p), s.not_(s.owns(r, p))))
        if shared:
            radix.landed(s, p)

    def p_abort(s: Ctx, r: Any) -> None:
        # An abort reaches prefill mid-transfer (timeout, client abort): #36612, #33507.
        s.require(s.isin(s.pphase(r), "waiting", "active"))
        s.require(s.not_(s.pend(r)))
        s.require(alive(s, r))
        s.set("pend", (r,), True)

    def conclude(s: Ctx, r: Any, prefill_after: str) -> None:
        """The sender ends the transfer: prefill in push mode, decode in pull mode."""
        if push:
            s.require(s.eq(s.pphase(r), "active"))
            s.set("pphase", (r,), prefill_after)
        else:
            s.require(s.eq(s.dphase(r), "transfer"))
            s.require(s.eq(s.poll(r), "transferring"))

    def done(s: Ctx, r: Any) -> None:
        conclude(s, r, "sent")
        # A dead prefill reports nothing (push: it is the sender; pull: its blocks are gone).
        s.require(alive(s, r))
        if sw.decode_reserve == "plus_one":
            # The sender wrote every page it has (at least one: a prompt has a token):
            # all of decode's pages but one.
            complete: Any = s.and_(
                s.exists("Page", lambda q: s.posted(r, q)),
                s.exists(
                    "Page",
                    lambda q: s.and_(
                        s.dst(r, q),
                        s.not_(s.posted(r, q)),
                        s.forall(
                            "Page",
                            lambda x: s.implies(s.and_(s.dst(r, x), s.ne(x, q)), s.posted(r, x)),
                        ),
                    ),
                ),
            )
        else:  # a placeholder's single page, or the whole table
            every_page = s.forall("Page", lambda q: s.implies(s.dst(r, q), s.posted(r, q)))
            complete = s.ite(
                placeholder(s, r), s.exists("Page", lambda q: s.posted(r, q)), every_page
            )
        s.require(complete)
        s.require(no_inflight(s, r))
        abort_wins = False if sw.success_overwrites_abort else s.pend(r)
        # KVPoll: Failed always overwrites; before #36612 Success overwrote the pending abort.
        s.set(
            "poll", (r,), s.ite(s.or_(s.eq(s.poll(r), "failed"), abort_wins), "failed", "success")
        )

    def fail(s: Ctx, r: Any) -> None:
        # Mooncake: the batch reports FAILED; writes already posted may still land.
        conclude(s, r, "stopped")
        # failure_status = success: the failure reaches decode as Success (vLLM #52234's
        # HMA path, dynamo #15079, LMCache #2972), and decode commits unwritten pages.
        reported = "success" if sw.failure_status == "success" else "failed"
        if sw.failure_status != "silent":  # silent: decode waits on (vLLM push, #50754)
            s.set("poll", (r,), s.ite(s.eq(s.poll(r), "failed"), "failed", reported))

    def commit(s: Ctx, r: Any) -> None:
        s.require(s.eq(s.dphase(r), "transfer"))
        s.require(s.eq(s.poll(r), "success"))
        b = bad(s, r)
        f = foreign(s, r)
        reject = s.or_(
            short(s, r) if sw.written_length_check else False,
            # #39500: Adler-32 over the pages. Decode skips the comparison when the value it
            # received is 0: enabled on one role only, it checks nothing.
            f if sw.transfer_checksum == "both" else False,
            f if sw.page_tags else False,  # owner tags checked before the first read
        )
        s.set("dphase", (r,), s.ite(reject, "done", "running"))
        s.set("resp", (r,), s.ite(reject, "error", "ok"))
        s.set("leaked", (r,), s.or_(s.leaked(r), s.and_(s.not_(reject), b)))
        _free_pages_of(s, r, reject)

    def step(s: Ctx, r: Any) -> None:
        s.require(s.eq(s.dphase(r), "running"))
        b = bad(s, r)
        if sw.page_tags:  # a foreign tag fails the request instead of being read
            f = foreign(s, r)
            s.set("dphase", (r,), s.ite(f, "done", "running"))
            s.set("resp", (r,), s.ite(f, "error", s.resp(r)))
            s.set("leaked", (r,), s.or_(s.leaked(r), s.and_(s.not_(f), b)))
            _free_pages_of(s, r, f)
        else:
            s.set("leaked", (r,), s.or_(s.leaked(r), b))

    def finish(s: Ctx, r: Any) -> None:
        s.require(s.eq(s.dphase(r), "running"))
        s.set("dphase", (r,), "done")
        _free_pages_of(s, r)

    def abort(s: Ctx, r: Any) -> None:
        s.require(s.isin(s.dphase(r), "queued", "transfer", "running"))
        # Before send prefill has no page indices; once running every write has landed.
        safe_now = s.isin(s.dphase(r), "queued", "running")
        if sw.release == "immediate":  # #24527/#35049: freed while writes are in flight
            free_now: Any = True
        elif sw.failed_means_drained:  # Mooncake: FAILED does not mean drained
            free_now = s.or_(safe_now, s.eq(s.poll(r), "failed"))
        else:
            free_now = safe_now
        s.set("dphase", (r,), s.ite(free_now, "done", "draining"))
        _free_pages_of(s, r, free_now)
        s.set("poll", (r,), "failed")
        s.set("abort_msg", (r,), True)
        s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "aborted", s.resp(r)))

    def abort_seen(s: Ctx, r: Any) -> None:
        s.require(s.abort_msg(r))
        s.require(s.isin(s.pphase(r), "waiting", "active"))
        s.require(alive(s, r))
        s.set("pphase", (r,), "stopped")

    def ack(s: Ctx, r: Any) -> None:
        # Deferred release (#38961): every prefill rank ACKs that its writes drained.
        s.require(s.eq(s.dphase(r), "draining"))
        if push:  # pull: the drain is decode's own reads, no prefill message
            s.require(alive(s, r))  # a dead prefill sends no ACK
        if sw.abort_ack == "after_drain":  # before_drain: #35360 review, #38961 points 1-3
            s.require(no_inflight(s, r))
        if push and sw.abort_notifies_prefill:
            s.require(s.not_(s.isin(s.pphase(r), "waiting", "active")))
        elif push:  # vLLM: only prefill's completed writes free it (finished_recving)
            s.require(s.eq(s.pphase(r), "sent"))
        s.set("dphase", (r,), "done")
        _free_pages_of(s, r)

    def timeout(s: Ctx, r: Any) -> None:
        s.require(sw.release == "deferred_timeout")  # frees without the ACK
        s.require(s.eq(s.dphase(r), "draining"))
        s.set("dphase", (r,), "done")
        _free_pages_of(s, r)

    # -- issue 12 (variants): decode gives up on its own ---------------------------------
    def give_up(s: Ctx, r: Any) -> None:
        # SGLang SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) or heartbeats declaring the
        # prefill dead: decode marks the request failed locally and sends no ABORT, so
        # prefill (alive, or slow) may go on writing.
        s.require(s.eq(s.dphase(r), "transfer"))
        free_now = sw.decode_gives_up == "free_at_once"
        s.set("dphase", (r,), "done" if free_now else "draining")
        if free_now:
            _free_pages_of(s, r)
        s.set("poll", (r,), "failed")
        s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "error", s.resp(r)))

    actions = [
        action("arrive", ("Req",), arrive, "router sends the request; both sides validate"),
        action("alloc", ("Req", "Page"), alloc, "decode preallocates a page"),
        action("send", ("Req",), send, "decode sends its page indices; transfer starts"),
        action("post", ("Req", "Page"), post, "a KV transfer into a decode page is posted"),
        action("land", ("Req", "Page"), land, "a posted transfer lands"),
    ]
    if push:
        actions.append(action("p_abort", ("Req",), p_abort, "an abort reaches prefill"))
    actions += [
        action("done", ("Req",), done, "the sender reports the transfer's status"),
        action("fail", ("Req",), fail, "the transfer fails; posted writes may still land"),
        action("commit", ("Req",), commit, "decode commits and reads the pages"),
        action("step", ("Req",), step, "a later decode step reads the pages"),
        action("finish", ("Req",), finish, "decode finishes and frees the pages"),
        action("abort", ("Req",), abort, "decode aborts (client disconnect, failure)"),
    ]
    if push and sw.abort_notifies_prefill:
        actions.append(action("abort_seen", ("Req",), abort_seen, "prefill sees the ABORT"))
    actions.append(action("ack", ("Req",), ack, "prefill ACKs the drain; decode frees"))
    if sw.release == "deferred_timeout":
        actions.append(action("timeout", ("Req",), timeout, "decode frees without the ACK"))
    if lease.expires(sw):  # prefill's source blocks go back early (model/handoff/lease.py)
        early = sw.prefill_hold == "early_free"
        why = "prefill frees its source blocks" if early else "prefill's lease expires"
        actions.append(action("expire", ("Req",), lease.expire_body(sw), why))
    if sw.decode_gives_up != "never":
        actions.append(action("give_up", ("Req",), give_up, "decode gives up without ABORT"))
    if shared:
        actions += radix.radix_actions(sw, fresh_own)
    if peer_death:
        actions.append(action("crash", ("Req",), crash, "the request's prefill dies"))
    if has_stale_ack(sw):  # model/handoff/stale_ack.py
        why = "a late ABORT_ACK of an earlier abort of the room"
        actions.append(action("stale_ack", ("Req",), stale_ack_body(sw, _free_pages_of), why))

    invariants = handoff_invariants(shared)

    def init(s: Ctx) -> Any:
        # Without a prefix cache no prompt hits (keeps other variants' state spaces).
        return True if sw.decode_prefix_cache else s.forall("Req", lambda r: s.not_(s.hit(r)))

    return Protocol(
        name="handoff",
        sorts=("Req", "Page"),
        vars=(VARS + radix.RADIX_VARS if shared else VARS) + (DEATH_VARS if peer_death else ()),
        actions=tuple(actions),
        invariants=invariants,
        init=init,
        switches=sw,
        symmetric=("Req", "Page"),
        strengthening=strengthening(sw),
        explain=explain_handoff,
        holding=("owns", "inflight"),  # decode page tables, posted writes not landed yet
        explore_symmetry=("Page",),
        liveness=handoff_liveness(),
        fair=engine_rules(),
    )
