"""What several of the handoff's rules ask of a request, written once (as the engine's
``refimpl/rules/context.py`` holds its shared facts): is its prefill alive, is its
prompt a placeholder, does its table hold pages it may not read, does a release free its
pages. Each reads the switches it depends on explicitly; none changes state but
``free_pages_of``.
"""

from __future__ import annotations

import kvproof.model.handoff.radix as radix
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def alive(s: Ctx, r: Term, death: bool) -> Term:
    """The prefill serving ``r`` still takes its steps (always, without ``crash``:
    ``death`` says the protocol has it, ``rules/crash.py``)."""
    return s.not_(s.p_dead(r)) if death else True


def free_pages_of(sw: Switches, s: Ctx, r: Term, when: Term = True) -> None:
    """Release every page of ``r`` (when ``when`` holds), and its locks."""
    s.update("owns", lambda x, q, old: s.ite(s.and_(s.eq(x, r), when), False, old))
    if radix.radix_on(sw):  # decode's radix cache shares head pages (issue 12 item 4)
        radix.release(s, r, when)


def decode_stub(sw: Switches, s: Ctx, r: Term) -> Term:
    """Decode queued its own reject's 1-token stub (``decode_admission = queue_reject``):
    it reserves, receives and commits it; prefill's 1 token is all the stub reads."""
    return s.over_d(r) if sw.decode_admission == "queue_reject" else False


def placeholder(sw: Switches, s: Ctx, r: Term) -> Term:
    # #30233: the pending reject is not honoured and the prompt becomes 1 token.
    if sw.honor_pending_reject or not sw.placeholder_prompt:
        return False
    if sw.decode_admission == "queue_reject":  # decode's own stub reads just that token
        return s.and_(s.over_p(r), s.not_(decode_stub(sw, s, r)))
    return s.over_p(r)


def short(sw: Switches, s: Ctx, r: Term) -> Term:
    """The sender writes fewer pages than decode reserved."""
    if sw.decode_reserve == "plus_one":  # vLLM PR #50558
        return True
    return placeholder(sw, s, r)


def written_own(s: Ctx, r: Term, p: Term) -> Term:
    """r's transfer wrote the page since its allocation (what tags and checksums see)."""
    return s.and_(s.holds(p, r), s.filled(p))


def fresh_own(s: Ctx, r: Term, p: Term) -> Term:
    return s.and_(written_own(s, r, p), s.at_pos(p))


def bad(sw: Switches, s: Ctx, r: Term) -> Term:
    """Some page in r's table does not hold r's KV, at its position, written in this
    allocation: what isolation forbids decode to read."""
    own = s.exists("Page", lambda p: s.and_(s.owns(r, p), s.not_(fresh_own(s, r, p))))
    return s.or_(own, radix.bad_shared(s, r)) if radix.radix_on(sw) else own


def foreign(s: Ctx, r: Term) -> Term:
    """Some page in r's table was not written by r since its allocation: what a page
    tag or the transfer checksum detects. Neither sees leftover slots inside a page r
    wrote (the tag is per page; the checksum covers the bytes prefill sent, leftovers
    included), nor a chunk at the wrong position (the bytes are the ones sent)."""
    return s.exists("Page", lambda p: s.and_(s.owns(r, p), s.not_(written_own(s, r, p))))


def in_place(sw: Switches, s: Ctx, r: Term) -> Term:
    """Where r's next landing write stays exact (``at_pos``). A placeholder ships one
    whole prefill page for 1 token: decode reads prefill's leftovers in the others.
    With a prefix hit decode has fewer pages than prefill's blocks; trimming the head
    (vLLM NIXL push before #48758) sends remote block i to local block i, which
    decode reads as chunk i + (cached chunks): every page is at the wrong position."""
    misplaced = s.hit(r) if sw.decode_prefix_cache and sw.remote_trim == "head" else False
    return s.not_(s.or_(placeholder(sw, s, r), misplaced))


def no_inflight(s: Ctx, r: Term) -> Term:
    return s.forall("Page", lambda p: s.not_(s.inflight(r, p)))
