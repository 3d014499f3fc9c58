"""``arrive(r)`` (E1): the router dispatches; each side admits the prompt on its own.

Each node validates against its own limits (``max_req_input_len``): that independence is
what opens the danger window of the incident (SGLang #30233).
"""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule
from kvproof.refimpl.tokenizer import PLACEHOLDER_TOKEN


def can_arrive(ctx: Context, f: Flight, ev: Event) -> bool:
    return not f.req.arrived


def do_arrive(ctx: Context, f: Flight, ev: Event) -> None:
    sw, req, p, d = ctx.sw, f.req, f.p, f.d
    req.arrived = True
    n = len(req.prompt)
    req.over_p = not ctx.prefill.limits.admits(n)
    req.over_d = not ctx.decode.limits.admits(n)
    # SGLang #38935/#38704: a pending reject is retired at the disaggregation admission
    # queue on both sides, before any allocation. #30233: the queues read finished(),
    # not to_finish, so without the fix the request went on.
    # decode_admission = queue_reject (0.5.15-0.5.20 DecodePreallocQueue.add): decode queues
    # its own reject as the 1-token stub instead of retiring it at the door.
    own = req.over_d and sw.decode_admission == "retire_reject"
    if own or (req.over_p and sw.honor_pending_reject):
        d.phase, p.phase, req.resp = "done", "stopped", "rejected"
        side = "decode" if req.over_d else "prefill"
        limit = (ctx.decode if req.over_d else ctx.prefill).limits.max_req_input_len
        req.reason = f"input of {n} tokens exceeds {side}'s max_req_input_len {limit}"
        return
    d.phase, p.phase = "queued", "waiting"
    if req.over_d:  # decode's copy is the stub: it reserves and reads one token's page
        stub = ctx.decode.new_request(f.rid, 1)
        d.prompt_len, d.reserve, d.read_len = stub.prompt_len, stub.reserve, stub.read_len
        req.reason = f"pending reject: {n} tokens over decode's limit"
    p.src_ok = True
    if sw.decode_prefix_cache and ctx.decode.prefix_pages:  # issue 12 item 3
        ps = ctx.decode.page_size
        cached = min(ctx.decode.prefix_pages, (n - 1) // ps)  # one page stays to send
        if cached and sw.radix_cache != "off":  # the head comes from the tree (share)
            ctx.decode.expect_head(d, cached)
        elif cached:
            ctx.decode.load_prefix(d, list(req.prompt[: cached * ps]))
        req.hit = bool(cached)
    if req.over_p:
        p.pend = True  # to_finish = FINISH_ABORT(400)
        req.reason = f"pending reject: {n} tokens over prefill's limit"
        if sw.placeholder_prompt:  # "set it to one token to skip the long prefill"
            p.tokens = [PLACEHOLDER_TOKEN]


ARRIVE = Rule("arrive", can_arrive, do_arrive)
