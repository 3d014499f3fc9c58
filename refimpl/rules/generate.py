"""``commit(r)`` (E9), ``step(r)`` (E10), ``finish(r)`` (E11): decode checks what arrived,
then reads it, step by step, until generation ends."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def checksum_compared(ctx: Context, received: tuple[int, ...]) -> bool:
    """SGLang #39500: decode compares only with the option on, and skips the comparison
    when the checksum it received is 0 (a prefill without the option sends 0)."""
    return ctx.sw.decode_checksums and any(received)


def read(ctx: Context, f: Flight) -> bool:
    """A decode step reading every page in the table; False if the tag guard tripped."""
    req, d = f.req, f.d
    token = ctx.decode.step(d, guarded=ctx.sw.page_tags)
    if token is None:
        req.guard_trips += 1
        req.resp, req.reason = "error", "page tag mismatch: a page is not this request's"
        ctx.free_decode(f)
        return False
    d.tokens.append(token)
    ctx.decode.record_read(d)
    return True


def can_commit(ctx: Context, f: Flight, ev: Event) -> bool:
    return f.d.phase == "transfer" and f.req.poll == "success"


def do_commit(ctx: Context, f: Flight, ev: Event) -> None:
    sw, req, d = ctx.sw, f.req, f.d
    assert d.aux is not None
    reason = ""
    if sw.written_length_check and d.aux.pages_written != len(d.table):
        reason = f"short transfer: {d.aux.pages_written} of {len(d.table)} pages written"
    elif sw.written_length_check and d.aux.tokens_written != d.prompt_len:
        reason = f"short transfer: {d.aux.tokens_written} of {d.prompt_len} tokens written"
    elif checksum_compared(ctx, d.aux.checksum) and ctx.decode.checksum(d) != d.aux.checksum:
        reason = "transfer checksum mismatch (Adler-32)"  # SGLang #39500
    if reason:
        req.resp, req.reason = "error", reason
        ctx.free_decode(f)
        return
    d.tokens = [d.aux.first_token]
    if not read(ctx, f):
        return
    if req.over_d:  # a stub decode queued (decode_admission): its first step ends it
        req.resp = "rejected"  # Req.update_finish_state: the pending reject, the 400
        ctx.free_decode(f)
        return
    req.resp = "ok"
    d.phase = "running"


def can_step(ctx: Context, f: Flight, ev: Event) -> bool:
    return f.d.phase == "running" and ctx.decode.can_step(f.d)


def do_step(ctx: Context, f: Flight, ev: Event) -> None:
    read(ctx, f)


def can_finish(ctx: Context, f: Flight, ev: Event) -> bool:
    return f.d.phase == "running"


def do_finish(ctx: Context, f: Flight, ev: Event) -> None:
    ctx.free_decode(f)


COMMIT = Rule("commit", can_commit, do_commit)
STEP = Rule("step", can_step, do_step)
FINISH = Rule("finish", can_finish, do_finish)
