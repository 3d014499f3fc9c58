"""Strengthening invariants: why the fixed handoff is safe, conjunct by conjunct.

Together with the safety invariants they form an inductive invariant (``kvproof prove``).
Each conjunct is universally quantified over requests and pages (the EPR discipline of
Ivy/mypyvy). ``can_post(r)`` mirrors the guard of ``post``: in push mode prefill posts
while active, in pull mode decode reads until it concludes the transfer.

The conjuncts are stated for the protocol as the switches make it; a buggy variant's
switches make some of them non-inductive, and ``kvproof prove`` prints the counterexample
to induction (e.g. ``release = immediate``: ``inflight_owned`` fails after ``abort``).
"""

from __future__ import annotations

from typing import Any

from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import Invariant
from kvproof.spec.variant import Switches

LIVE = ("queued", "transfer", "running", "draining")
HELD = ("transfer", "running", "draining")


def strengthening(sw: Switches, assume: frozenset[str] = frozenset()) -> tuple[Invariant, ...]:
    """The conjuncts for these switches, in the environment ``assume`` describes."""
    push = sw.transfer_mode == "push"
    # vLLM's lease (kv_lease_duration) under lease_outlives_read: the blocks may go once
    # decode's reads have all landed, so a source is valid only while a read can use it.
    lease = not push and sw.prefill_hold == "lease"

    def can_post(s: Ctx, r: Any) -> Any:
        if push:
            return s.eq(s.pphase(r), "active")
        return s.and_(s.eq(s.dphase(r), "transfer"), s.eq(s.poll(r), "transferring"))

    def table(s: Ctx, r: Any, p: Any) -> Any:
        """The pages the sender was given: the table, and (radix cache, #38355) a page the
        request handed to the tree, which it still reads as a locked head page."""
        if sw.radix_cache != "refcounted":
            return s.owns(r, p)
        return s.or_(s.owns(r, p), s.and_(s.shares(r, p), s.not_(s.hit(r))))

    def all_rp(fn: Any) -> Any:
        return lambda s: s.forall("Req", lambda r: s.forall("Page", lambda p: fn(s, r, p)))

    def all_r(fn: Any) -> Any:
        return lambda s: s.forall("Req", lambda r: fn(s, r))

    out = [
        # Pages belong only to requests decode is still holding.
        Invariant(
            "owns_live",
            all_rp(lambda s, r, p: s.implies(s.owns(r, p), s.isin(s.dphase(r), *LIVE))),
            safety=False,
        ),
        # The sender gets page indices only at send (never in idle/queued).
        Invariant(
            "dst_after_send",
            all_rp(
                lambda s, r, p: s.implies(
                    s.dst(r, p), s.not_(s.isin(s.dphase(r), "idle", "queued"))
                )
            ),
            safety=False,
        ),
        Invariant(
            "posted_to_dst",
            all_rp(lambda s, r, p: s.implies(s.posted(r, p), s.dst(r, p))),
            safety=False,
        ),
        Invariant(
            "inflight_posted",
            all_rp(lambda s, r, p: s.implies(s.inflight(r, p), s.posted(r, p))),
            safety=False,
        ),
        # While decode holds a request's pages, the sender's copy is exactly its table:
        # nothing frees or reallocates them behind the sender's back.
        Invariant(
            "held_dst_is_table",
            all_rp(
                lambda s, r, p: s.implies(
                    s.isin(s.dphase(r), *HELD), s.eq(s.dst(r, p), table(s, r, p))
                )
            ),
            safety=False,
        ),
        # The heart of deferred release (#38961): a write in flight has its pages held.
        Invariant(
            "inflight_held",
            all_rp(
                lambda s, r, p: s.implies(
                    s.inflight(r, p), s.isin(s.dphase(r), "transfer", "draining")
                )
            ),
            safety=False,
        ),
        Invariant(
            "sender_while_held",
            all_r(
                lambda s, r: s.implies(can_post(s, r), s.isin(s.dphase(r), "transfer", "draining"))
            ),
            safety=False,
        ),
        Invariant(
            "sender_has_source",
            all_r(
                lambda s, r: s.implies(
                    s.isin(s.pphase(r), "waiting", "active")
                    if push
                    else s.isin(s.dphase(r), "queued", "transfer"),
                    s.src_ok(r),
                )
            ),
            safety=False,
        ),
        Invariant(
            "posted_source_valid",
            all_rp(
                lambda s, r, p: s.implies(
                    s.and_(s.posted(r, p), s.inflight(r, p)) if lease else s.posted(r, p),
                    s.src_ok(r),
                )
            ),
            safety=False,
        ),
        # A landed write of r in a page r still owns is r's fresh KV, every slot at its
        # position (``at_pos``: no placeholder reaches a transfer once the pending reject is
        # honoured): no one else can write there (inflight_held + one_owner) and alloc
        # needs a free page.
        Invariant(
            "landed_is_fresh",
            all_rp(
                lambda s, r, p: s.implies(
                    s.and_(s.posted(r, p), s.not_(s.inflight(r, p)), s.owns(r, p)),
                    s.and_(s.holds(p, r), s.filled(p), s.at_pos(p)),
                )
            ),
            safety=False,
        ),
        # Success means every destination page was written and landed, and the sender is
        # finished (the placeholder's short transfer is retired at admission, #38935).
        Invariant(
            "success_is_complete",
            all_rp(
                lambda s, r, p: s.implies(
                    s.eq(s.poll(r), "success"),
                    s.and_(
                        s.eq(s.pphase(r), "sent") if push else s.not_(can_post(s, r)),
                        s.implies(s.dst(r, p), s.and_(s.posted(r, p), s.not_(s.inflight(r, p)))),
                    ),
                )
            ),
            safety=False,
        ),
        Invariant(
            "early_no_status",
            all_r(
                lambda s, r: s.and_(
                    s.implies(
                        s.isin(s.dphase(r), "idle", "queued"),
                        s.and_(s.eq(s.poll(r), "none"), s.not_(s.abort_msg(r))),
                    ),
                    s.implies(s.eq(s.dphase(r), "idle"), s.eq(s.pphase(r), "idle")),
                    s.implies(s.eq(s.dphase(r), "queued"), s.eq(s.pphase(r), "waiting")),
                )
            ),
            safety=False,
        ),
        Invariant(
            "running_after_success",
            all_r(lambda s, r: s.implies(s.eq(s.dphase(r), "running"), s.eq(s.poll(r), "success"))),
            safety=False,
        ),
        # A rejected request is retired at arrival: it never holds pages or gets a 200.
        Invariant(
            "rejected_retired",
            all_r(
                lambda s, r: s.implies(
                    s.or_(s.over_d(r), s.over_p(r) if sw.honor_pending_reject else False),
                    s.and_(s.isin(s.dphase(r), "idle", "done"), s.ne(s.resp(r), "ok")),
                )
            ),
            safety=False,
        ),
        # A pending abort is never turned into a success (#36612 downgrades Success after Failure).
        Invariant(
            "pending_abort_fails",
            all_r(
                lambda s, r: s.implies(
                    s.pend(r),
                    s.and_(
                        s.ne(s.poll(r), "success"),
                        s.ne(s.dphase(r), "running"),
                        s.ne(s.resp(r), "ok"),
                    ),
                )
            ),
            safety=False,
        ),
        Invariant(
            "ok_after_commit",
            all_r(
                lambda s, r: s.implies(
                    s.eq(s.resp(r), "ok"),
                    s.and_(
                        s.not_(s.isin(s.dphase(r), "idle", "queued", "transfer")),
                        s.eq(s.pphase(r), "sent") if push else True,
                    ),
                )
            ),
            safety=False,
        ),
    ]
    if sw.radix_cache == "refcounted":
        out += radix_strengthening(all_rp)
    if push:
        out.append(
            Invariant(
                "prefill_busy_no_success",
                all_r(
                    lambda s, r: s.implies(
                        s.isin(s.pphase(r), "waiting", "active"),
                        s.and_(s.ne(s.poll(r), "success"), s.ne(s.dphase(r), "running")),
                    )
                ),
                safety=False,
            )
        )
    return tuple(out)


def radix_strengthening(all_rp: Any) -> list[Invariant]:
    """Decode's radix cache with reference counts (#38355): the tree owns what it maps, a
    lock keeps a page mapped, and nothing writes a mapped page, so it keeps the KV it was
    inserted with (its inserter's own, landed: ``landed_is_fresh``)."""
    return [
        Invariant(
            "cached_unowned",
            all_rp(lambda s, r, p: s.implies(s.cached(p), s.not_(s.owns(r, p)))),
            safety=False,
        ),
        Invariant(
            "shared_is_cached",
            all_rp(lambda s, r, p: s.implies(s.shares(r, p), s.cached(p))),
            safety=False,
        ),
        # Only a hit locks a page before running; a request without one locks the page it
        # inserted, once running (and drops it when it ends).
        Invariant(
            "inserter_runs",
            all_rp(
                lambda s, r, p: s.implies(
                    s.and_(s.shares(r, p), s.not_(s.hit(r))), s.eq(s.dphase(r), "running")
                )
            ),
            safety=False,
        ),
        Invariant(
            "cached_keeps_prefix",
            all_rp(lambda s, r, p: s.implies(s.cached(p), s.prefix_ok(p))),
            safety=False,
        ),
    ]
