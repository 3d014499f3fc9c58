"""``insert(r, p)`` (E18) and ``share(r, p)`` (E19): decode's radix cache.

The vocabulary (``cached``, ``shares``, ``prefix_ok``, ``shared_write``) and the race
these rules open are ``model/handoff/radix.py``'s. Eviction (only of unlocked nodes) is
not modelled: the tree keeps what it holds, which only makes fewer pages free.
"""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import fresh_own
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def insert(sw: Switches, s: Ctx, r: Term, p: Term) -> None:
    # cache_unfinished_req / cache_finished_req: a running request's KV goes into the
    # tree, page by page (a request without a hit: its table holds its whole prompt).
    s.require(s.eq(s.dphase(r), "running"))
    s.require(s.not_(s.hit(r)))
    s.require(s.owns(r, p))
    s.require(s.not_(s.cached(p)))
    s.set("cached", (p,), True)
    s.set("prefix_ok", (p,), fresh_own(s, r, p))
    if sw.radix_cache == "refcounted":
        # #38355: the tree takes the page; the request keeps it as a locked head page,
        # so its release no longer frees it.
        s.set("owns", (r, p), False)
        s.set("shares", (r, p), True)
    # free_while_cached (#38319): the page stays in the request's table and its
    # release frees it back to the pool while the tree still maps it.


def share(sw: Switches, s: Ctx, r: Term, p: Term) -> None:
    # _match_prefix_and_lock: the prompt's head matches the tree; inc_lock_ref.
    s.require(s.eq(s.dphase(r), "queued"))
    s.require(s.hit(r))
    s.require(s.cached(p))
    s.require(s.forall("Page", lambda q: s.not_(s.shares(r, q))))
    s.set("shares", (r, p), True)
