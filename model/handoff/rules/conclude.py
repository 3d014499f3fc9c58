"""``done(r)`` (E7) and ``fail(r)`` (E8): the sender ends the transfer and reports its
status. The sender is prefill in push mode and decode in pull mode (``conclude``)."""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import alive, no_inflight, placeholder
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def conclude(sw: Switches, s: Ctx, r: Term, prefill_after: str) -> None:
    """The sender ends the transfer: prefill in push mode, decode in pull mode."""
    if sw.transfer_mode == "push":
        s.require(s.eq(s.pphase(r), "active"))
        s.set("pphase", (r,), prefill_after)
    else:
        s.require(s.eq(s.dphase(r), "transfer"))
        s.require(s.eq(s.poll(r), "transferring"))


def _complete(sw: Switches, s: Ctx, r: Term) -> Term:
    """The sender wrote every page it has."""
    if sw.decode_reserve == "plus_one":
        # At least one (a prompt has a token): all of decode's pages but one.
        return s.and_(
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
    # a placeholder's single page, or the whole table
    every_page = s.forall("Page", lambda q: s.implies(s.dst(r, q), s.posted(r, q)))
    return s.ite(placeholder(sw, s, r), s.exists("Page", lambda q: s.posted(r, q)), every_page)


def done(sw: Switches, s: Ctx, r: Term, *, death: bool = False) -> None:
    conclude(sw, s, r, "sent")
    # A dead prefill reports nothing (push: it is the sender; pull: its blocks are gone).
    s.require(alive(s, r, death))
    s.require(_complete(sw, s, r))
    s.require(no_inflight(s, r))
    abort_wins = False if sw.success_overwrites_abort else s.pend(r)
    # KVPoll: Failed always overwrites; before #36612 Success overwrote the pending abort.
    s.set("poll", (r,), s.ite(s.or_(s.eq(s.poll(r), "failed"), abort_wins), "failed", "success"))


def fail(sw: Switches, s: Ctx, r: Term) -> None:
    # Mooncake: the batch reports FAILED; writes already posted may still land.
    conclude(sw, s, r, "stopped")
    # failure_status = success: the failure reaches decode as Success (vLLM #52234's
    # HMA path, dynamo #15079, LMCache #2972), and decode commits unwritten pages.
    reported = "success" if sw.failure_status == "success" else "failed"
    if sw.failure_status != "silent":  # silent: decode waits on (vLLM push, #50754)
        s.set("poll", (r,), s.ite(s.eq(s.poll(r), "failed"), "failed", reported))
