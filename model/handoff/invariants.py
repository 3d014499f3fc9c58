"""The handoff's safety invariants (numbered and stated in ``spec/invariants.py``)."""

from __future__ import annotations

import kvproof.model.handoff.radix as radix
from kvproof.model.lang.dsl import Invariant


def handoff_invariants(shared: bool) -> tuple[Invariant, ...]:
    """``shared``: decode's radix cache shares head pages (issue 12 item 4)."""
    return (
        Invariant("isolation", lambda s: s.forall("Req", lambda r: s.not_(s.leaked(r)))),
        Invariant("no_stray_write", lambda s: s.forall("Page", lambda p: s.not_(s.stray(p)))),
        Invariant(
            "reject_final",
            lambda s: s.forall(
                "Req",
                lambda r: s.implies(
                    s.or_(s.over_p(r), s.over_d(r), s.pend(r)),
                    s.and_(s.ne(s.resp(r), "ok"), s.ne(s.dphase(r), "running")),
                ),
            ),
        ),
        # A page a transfer writes has one writer-owner; a page the tree shares is never
        # written (issue 12 item 4: read-only sharing is not a second owner).
        Invariant("one_owner", lambda s: s.forall("Page", lambda p: radix.one_owner(s, p, shared))),
    )
