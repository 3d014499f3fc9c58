"""``done(r)`` (E7) and ``fail(r)`` (E8): the sender ends the transfer and reports its status.

The sender is prefill in push mode and decode in pull mode (the model's ``conclude``).
"""

from __future__ import annotations

from kvproof.refimpl.decode import Aux
from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def concluding(ctx: Context, f: Flight) -> bool:
    """The sender may still conclude: prefill is sending (push), or decode is reading and
    its poll says transferring (pull)."""
    if ctx.push:
        return f.p.phase == "active"
    return f.d.phase == "transfer" and f.req.poll == "transferring"


def can_done(ctx: Context, f: Flight, ev: Event) -> bool:
    # A dead prefill reports nothing (push: it is the sender; pull: its blocks are gone).
    return concluding(ctx, f) and ctx.all_posted(f) and not ctx.inflight(f) and not f.p.dead


def do_done(ctx: Context, f: Flight, ev: Event) -> None:
    req, p, d = f.req, f.p, f.d
    if ctx.push:
        p.phase = "sent"
    assert p.first_token is not None
    d.aux = Aux(p.first_token, ctx.sender_pages(f), p.checksum, len(p.tokens))
    # KVPoll: Failed always overwrites; before #36612 Success overwrote the pending abort.
    abort_wins = p.pend and not ctx.sw.success_overwrites_abort
    req.poll = "failed" if req.poll == "failed" or abort_wins else "success"


def can_fail(ctx: Context, f: Flight, ev: Event) -> bool:
    return concluding(ctx, f)


def do_fail(ctx: Context, f: Flight, ev: Event) -> None:
    # Mooncake: the batch reports FAILED; writes already posted may still land.
    req, p = f.req, f.p
    req.reason = "KV transfer failed"
    if ctx.push:
        p.phase = "stopped"  # later chunks are skipped
    if ctx.sw.failure_status == "success" and req.poll != "failed":
        # vLLM #52234 (HMA path skips _invalid_block_ids), dynamo #15079, LMCache #2972:
        # the failure reaches decode as a completed transfer; the aux row carries what
        # prefill had (its first token; no length or checksum check runs on it here).
        token = p.first_token if p.first_token is not None else 0
        f.d.aux = Aux(token, len(p.posted), p.checksum)
        req.poll = "success"
        return
    if ctx.sw.failure_status == "silent":  # vLLM NIXL push (#50754): D is never told
        return
    req.poll = "failed"


DONE = Rule("done", can_done, do_done)
FAIL = Rule("fail", can_fail, do_fail)
