"""A user-defined protocol: kvproof's handoff with one rule changed, checked by kvproof.

The changed rule is a tempting optimisation of deferred release: "when decode aborts a
request into whose pages nothing has been posted yet, there is nothing to drain, so free the
pages at once instead of waiting for prefill's drain ACK". kvproof shows why it is wrong:
prefill received the page indices at ``send`` and keeps posting until it *sees* the ABORT,
so "nothing posted yet" is not "nothing will be posted". A write posted after the early
free lands in a page decode has already given to another request.

Run it (from the repository root)::

    kvproof check --all --protocol examples/custom_protocol/my_handoff.py:Handoff
    kvproof prove --all --protocol examples/custom_protocol/my_handoff.py:Handoff

The module shows the three things a user protocol can bring:

- its own switches (``SWITCHES``: a frozen dataclass; ``CHOICES`` lists enumerated values),
  so that its own variants (``variants/*.toml``) are validated as strictly as kvproof's;
- its own invariants (``inflight_pages_held`` below), named in the variants' ``[expect]``;
- its own variants folder (``VARIANTS_DIR``), used when ``--variants-dir`` is not given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from kvproof.model.handoff import build_handoff
from kvproof.model.lang.dsl import Action, ActionKind, Invariant, Protocol
from kvproof.spec.variant import Switches

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"

# Every other design choice as in SGLang v0.5.22 with release after the drain ACK.
BASE = Switches(
    transfer_mode="push",
    honor_pending_reject=True,
    placeholder_prompt=True,
    decode_reserve="own_prompt",
    written_length_check=False,
    success_overwrites_abort=False,
    release="deferred_ack",
    failed_means_drained=False,
    transfer_checksum="off",
    page_tags=False,
    prefill_hold="until_read",
    decode_prefix_cache=False,
    remote_trim="tail",
    failure_status="failed",
    abort_ack="after_drain",
    decode_gives_up="never",
)


@dataclass(frozen=True)
class EarlyFreeSwitches:
    """This protocol's switches: the only choices its variants make."""

    # As kvproof's: when decode frees an aborted request's pages.
    release: str
    # The changed rule: abort frees at once when no write into the pages was posted yet.
    free_unposted_on_abort: bool

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "release": ("immediate", "deferred_ack", "deferred_timeout"),
    }


def build(sw: EarlyFreeSwitches) -> Protocol:
    base = build_handoff(replace(BASE, release=sw.release))

    def abort(s: Any, r: Any) -> None:
        # kvproof's abort (model/handoff/rules/abort.py) with one more way to free at once.
        s.require(s.isin(s.dphase(r), "queued", "transfer", "running"))
        free_now: Any = s.isin(s.dphase(r), "queued", "running")
        if sw.release == "immediate":
            free_now = True
        if sw.free_unposted_on_abort:
            nothing_posted = s.forall("Page", lambda p: s.not_(s.posted(r, p)))
            free_now = s.or_(free_now, nothing_posted)
        s.set("dphase", (r,), s.ite(free_now, "done", "draining"))
        s.update("owns", lambda x, q, old: s.ite(s.and_(s.eq(x, r), free_now), False, old))
        s.set("poll", (r,), "failed")
        s.set("abort_msg", (r,), True)
        s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "aborted", s.resp(r)))

    # A safety invariant of our own: a write in flight always has its pages held by decode.
    inflight_pages_held = Invariant(
        "inflight_pages_held",
        lambda s: s.forall(
            "Req",
            lambda r: s.forall(
                "Page",
                lambda p: s.implies(s.inflight(r, p), s.isin(s.dphase(r), "transfer", "draining")),
            ),
        ),
    )
    # Every action says who takes it (``ActionKind``): the fuzzers inject only faults and
    # liveness assumes only engine steps fair. Our ``abort`` is still the environment's (a
    # client disconnects); the base protocol's kinds come from kvproof's ``spec/events.py``.
    actions = tuple(
        Action("abort", a.params, abort, a.doc, ActionKind.FAULT) if a.name == "abort" else a
        for a in base.actions
    )
    return replace(
        base,
        name="handoff-early-free",
        actions=actions,
        invariants=(*base.invariants, inflight_pages_held),
        switches=sw,
    )


class Handoff:
    """What ``--protocol my_handoff:Handoff`` names: the factory and its vocabulary."""

    SWITCHES = EarlyFreeSwitches
    VARIANTS_DIR = VARIANTS_DIR
    build = staticmethod(build)
