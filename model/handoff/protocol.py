"""The prefill -> RDMA -> decode KV handoff (spec/handoff.md), written in the DSL.

One protocol for every variant: each upstream bug is a switch (``spec/variant.py``), read
by the rules with plain Python ``if`` (switches are constants; state is never branched on).
The vocabulary is here; each event is a module-level rule ``rule(sw, s, r, ...)`` in
``rules/`` (one file per event or small family, named as the engine's ``refimpl/rules/``),
and ``build_handoff`` binds the switches into them.

Initial state: every page holds KV of earlier requests outside the instance (pools are
never zeroed), no request has arrived, and each request's prompt may be over prefill's
and/or decode's limit (``over_p``/``over_d`` are free): the model covers every deployment,
including one with a danger window (prefill rejects what decode admits).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import kvproof.model.handoff.radix as radix
from kvproof.model.handoff.explain import explain_handoff
from kvproof.model.handoff.invariants import handoff_invariants
from kvproof.model.handoff.kinds import action
from kvproof.model.handoff.liveness import DEATH_VARS, engine_rules, handoff_liveness
from kvproof.model.handoff.rules import (
    abort,
    arrive,
    conclude,
    crash,
    expire,
    generate,
    release,
    reserve,
    stale_ack,
    write,
)
from kvproof.model.handoff.rules import radix as radix_rules
from kvproof.model.handoff.strengthening import strengthening
from kvproof.model.lang.context import Ctx, Term
from kvproof.model.lang.dsl import BOOL, Action, Enum, Protocol, Var
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


R = ("Req",)
RP = ("Req", "Page")

# E1..E21 (spec/events.py's order): name, parameters, rule, whether the rule is a prefill
# step (it takes ``death``: a dead prefill takes none, ``guards.alive``), and its doc.
RULES: tuple[tuple[str, tuple[str, ...], Callable[..., None], bool, str], ...] = (
    ("arrive", R, arrive.arrive, False, "router sends the request; both sides validate"),
    ("alloc", RP, reserve.alloc, False, "decode preallocates a page"),
    ("send", R, reserve.send, False, "decode sends its page indices; transfer starts"),
    ("post", RP, write.post, True, "a KV transfer into a decode page is posted"),
    ("land", RP, write.land, False, "a posted transfer lands"),
    ("p_abort", R, abort.p_abort, True, "an abort reaches prefill"),
    ("done", R, conclude.done, True, "the sender reports the transfer's status"),
    ("fail", R, conclude.fail, False, "the transfer fails; posted writes may still land"),
    ("commit", R, generate.commit, False, "decode commits and reads the pages"),
    ("step", R, generate.step, False, "a later decode step reads the pages"),
    ("finish", R, generate.finish, False, "decode finishes and frees the pages"),
    ("abort", R, abort.abort, False, "decode aborts (client disconnect, failure)"),
    ("abort_seen", R, abort.abort_seen, True, "prefill sees the ABORT"),
    ("ack", R, release.ack, True, "prefill ACKs the drain; decode frees"),
    ("timeout", R, release.timeout, False, "decode frees without the ACK"),
    ("expire", R, expire.expire, False, "prefill's source blocks go back early"),
    ("give_up", R, release.give_up, False, "decode gives up without ABORT"),
    ("insert", RP, radix_rules.insert, False, "decode inserts a page into its radix tree"),
    ("share", RP, radix_rules.share, False, "a request locks a cached head page"),
    ("crash", R, crash.crash, False, "the request's prefill dies"),
    ("stale_ack", R, stale_ack.stale_ack, False, "a late ABORT_ACK of an earlier abort"),
)


def present(sw: Switches, peer_death: bool) -> dict[str, bool]:
    """The events these switches have beyond the ones every variant has."""
    push = sw.transfer_mode == "push"
    shared = radix.radix_on(sw)  # decode's radix cache shares head pages (issue 12 item 4)
    return {
        "p_abort": push,
        "abort_seen": push and sw.abort_notifies_prefill,
        "timeout": sw.release == "deferred_timeout",
        "expire": expire.expires(sw),  # prefill's source blocks go back early
        "give_up": sw.decode_gives_up != "never",
        "insert": shared,
        "share": shared,
        "crash": peer_death,
        # decode counts prefill's ABORT_ACKs (model/handoff/rules/stale_ack.py)
        "stale_ack": push and sw.abort_notifies_prefill,
    }


def _doc(sw: Switches, name: str, doc: str) -> str:
    if name == "expire":  # the event's doc says which of the two it is
        early = sw.prefill_hold == "early_free"
        return "prefill frees its source blocks" if early else "prefill's lease expires"
    return doc


def actions(sw: Switches, peer_death: bool = False) -> tuple[Action, ...]:
    """The rules these switches have, with the switches (and ``peer_death``) bound."""
    has = present(sw, peer_death)
    out = []
    for name, params, rule, prefill_step, doc in RULES:
        if has.get(name, True):
            body = partial(rule, sw, death=peer_death) if prefill_step else partial(rule, sw)
            out.append(action(name, params, body, _doc(sw, name, doc)))
    return tuple(out)


def _init(sw: Switches, s: Ctx) -> Term:
    # Without a prefix cache no prompt hits (keeps other variants' state spaces).
    return True if sw.decode_prefix_cache else s.forall("Req", lambda r: s.not_(s.hit(r)))


def build_handoff(sw: Switches, *, peer_death: bool = False) -> Protocol:
    """The handoff protocol with the switches of one variant. ``peer_death`` (liveness,
    #29) adds ``crash``: a request's prefill dies (``model/handoff/rules/crash.py``)."""
    shared = radix.radix_on(sw)
    return Protocol(
        name="handoff",
        sorts=("Req", "Page"),
        vars=(VARS + radix.RADIX_VARS if shared else VARS) + (DEATH_VARS if peer_death else ()),
        actions=actions(sw, peer_death),
        invariants=handoff_invariants(shared),
        init=partial(_init, sw),
        switches=sw,
        symmetric=("Req", "Page"),
        strengthening=strengthening(sw),
        explain=explain_handoff,
        holding=("owns", "inflight"),  # decode page tables, posted writes not landed yet
        explore_symmetry=("Page",),
        liveness=handoff_liveness(),
        fair=engine_rules(),
    )
