"""The model's side of the projection: the handoff model's state read as a ``Projection``.

The model has no clock and no code objects; what it says about a request is its page
table (``owns``), its client response (``resp``), whether decode committed (a commit the
walk took, or one the model could take now: a Success decode has not taken is a
disagreement), and, at an over-long prompt's arrival, what prefill's intake did with it
(``pphase``, ``placeholder_prompt``), and the transfer status decode holds (``poll``:
"pending" until the transfer concludes, then "success" or "failed"). Page counts are left
``None`` until the model carries them (``projection.OPTIONAL``).
"""

from __future__ import annotations

from kvproof.checker.conform.engine import RequestSpec
from kvproof.checker.conform.projection import Projection, RequestView
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance


def requests_of(concrete: Concrete, state: State) -> tuple[RequestSpec, ...]:
    """The requests' fixed facts (rigid variables) of an initial state."""
    return tuple(
        RequestSpec(
            bool(concrete.value(state, "over_p", (r,))),
            bool(concrete.value(state, "over_d", (r,))),
        )
        for r in range(concrete.inst.sizes["Req"])
    )


def intake_of(concrete: Concrete, state: State, r: int) -> str | None:
    """Right after ``arrive(r)``: what prefill's intake did with an over-long prompt
    (one decode also refuses is decode's own reject: not compared)."""
    if not concrete.value(state, "over_p", (r,)) or concrete.value(state, "over_d", (r,)):
        return None
    if concrete.value(state, "pphase", (r,)) == "stopped":
        return "retired"
    return "stub" if concrete.protocol.switches.placeholder_prompt else "queued"


def pages_sent_of_reserved(concrete: Concrete, state: State, r: int) -> str | None:
    """Right after ``arrive(r)``: how many of r's reserved pages prefill sends, by the
    model's switches (``model/handoff/rules/guards.py``: ``placeholder``, ``short``); None for
    a prompt decode itself refuses (no reservation on either side)."""
    if concrete.value(state, "over_d", (r,)):
        return None
    sw = concrete.protocol.switches
    if concrete.value(state, "resp", (r,)) == "rejected":
        return "none"
    over_p = bool(concrete.value(state, "over_p", (r,)))
    if over_p and sw.placeholder_prompt and not sw.honor_pending_reject:
        return "short"  # the 1-token stub: one page of the reservation
    if getattr(sw, "decode_reserve", "own_prompt") == "plus_one":
        return "short"
    return "whole"


def admission_of(concrete: Concrete, state: State, r: int) -> str | None:
    """What decode's admission did with an arrived request: "retired" (a prompt over
    decode's limit, under ``decode_admission = retire_reject``) or "queued". None before
    arrival, and for a prompt only prefill rejects under ``honor_pending_reject``: the model
    ends it on both sides at once, while decode's own check admits it (how prefill's 400
    reaches decode is not modelled)."""
    if concrete.value(state, "dphase", (r,)) == "idle":
        return None
    sw = concrete.protocol.switches
    if concrete.value(state, "over_d", (r,)):
        return "retired" if sw.decode_admission == "retire_reject" else "queued"
    if concrete.value(state, "over_p", (r,)) and sw.honor_pending_reject:
        return None
    return "queued"


def reported_status(concrete: Concrete, before: State, inst: ActionInstance) -> str | None:
    """The status prefill's sender reports at ``done``, from the state before the step
    (``model/handoff/rules/conclude.py::done``): Failed when a pending abort wins over Success
    (``success_overwrites_abort`` off), else Success. Whether decode's status then changes
    is the code's decision (Failed is terminal), not the walk's."""
    if inst.action != "done":
        return None
    r = inst.args[0]
    wins = bool(concrete.value(before, "pend", (r,)))
    if concrete.protocol.switches.success_overwrites_abort:
        wins = False
    return "failed" if wins else "success"


def prefill_status(concrete: Concrete, state: State, r: int) -> str | None:
    """The status prefill's sender holds (push): "pending" while it waits or writes,
    "failed" once an abort reached it (``pend``) or it stopped (``fail``, ``abort_seen``),
    the reported status once it concluded (``done``). None before arrival, for a request
    retired at arrival, and where the model does not decide it: with
    ``success_overwrites_abort`` a Failed is not terminal, so a pending abort's status
    depends on an order the model does not keep (the abort before or after decode's
    metadata)."""
    if concrete.protocol.switches.transfer_mode != "push":
        return None
    phase = str(concrete.value(state, "pphase", (r,)))
    if phase == "idle" or concrete.value(state, "resp", (r,)) == "rejected":
        return None
    pend = bool(concrete.value(state, "pend", (r,)))
    lenient = concrete.protocol.switches.success_overwrites_abort
    if phase == "sent":
        return "failed" if pend and not lenient else "success"
    if phase == "stopped":
        return "failed"
    sw = concrete.protocol.switches
    if sw.prefill_reject == "retire_after_forward" and concrete.value(state, "over_p", (r,)):
        # The pending reject is the request's own (to_finish), not its sender's: the
        # sender stays pending until the forward retires it (``send``: stopped).
        return "pending"
    if pend:
        return None if lenient else "failed"
    return "pending"


def decode_status(concrete: Concrete, state: State, r: int) -> str | None:
    """The transfer status decode holds for an arrived request: "pending" until the
    transfer concludes (``poll`` none or transferring), then "success" or "failed"."""
    if concrete.value(state, "dphase", (r,)) == "idle":
        return None
    poll = str(concrete.value(state, "poll", (r,)))
    return poll if poll in ("success", "failed") else "pending"


def project(
    concrete: Concrete,
    state: State,
    committed: set[int],
    intake: dict[int, str],
    sent: dict[int, str] | None = None,
    freed_in_flight: set[int] | None = None,
) -> Projection:
    pages = concrete.inst.sizes["Page"]
    views = []
    for r in range(concrete.inst.sizes["Req"]):
        owned = frozenset(p for p in range(pages) if concrete.value(state, "owns", (r, p)))
        resp = concrete.value(state, "resp", (r,))
        ready = concrete.value(state, "dphase", (r,)) == "transfer" and (
            concrete.value(state, "poll", (r,)) == "success"
        )
        views.append(
            RequestView(
                owned,
                resp in ("aborted", "error"),
                r in committed or ready,
                pages_sent_of_reserved=(sent or {}).get(r),
                # The model's ``ack`` is every prefill rank's drain ACK at once.
                released_after_acks="all",
                intake=intake.get(r),
                source=source_of(concrete, state, r),
                source_freed_in_flight=r in (freed_in_flight or ()),
                decode_status=decode_status(concrete, state, r),
                prefill_status=prefill_status(concrete, state, r),
                admission=admission_of(concrete, state, r),
            )
        )
    stray = frozenset(p for p in range(pages) if concrete.value(state, "stray", (p,)))
    return Projection(tuple(views), stray)


def source_of(concrete: Concrete, state: State, r: int) -> frozenset[int] | None:
    """Prefill's source blocks while a transfer still needs them (decode has not concluded
    it): one abstract block, gone once ``expire`` took them (``src_ok``). ``None`` before
    arrival, after the transfer, and for a prompt rejected on arrival."""
    if concrete.value(state, "dphase", (r,)) not in ("queued", "transfer"):
        return None
    if concrete.value(state, "pphase", (r,)) in ("idle", "stopped") and concrete.value(
        state, "src_ok", (r,)
    ):
        return None  # prefill never ran it, or stopped before serving it
    return frozenset({0}) if concrete.value(state, "src_ok", (r,)) else frozenset()


def frees_under_transfer(concrete: Concrete, after: State, inst: ActionInstance) -> bool:
    """``inst`` freed prefill's source blocks (``expire``) while a read or write of them
    was in flight (``inflight``: posted, not landed), judged in the state after it:
    ``expire`` does not touch ``inflight``. The code's side is sticky (a later land does not
    undo it), so the walk keeps the answer (``walk.py``)."""
    if inst.action != "expire":
        return False
    r = inst.args[0]
    pages = range(concrete.inst.sizes["Page"])
    return any(concrete.value(after, "inflight", (r, p)) for p in pages)


def abstract(concrete: Concrete, state: State, r: int) -> tuple[str, str, str]:
    """A request's abstract phase: decode's phase, prefill's phase, the status decode sees."""
    return (
        str(concrete.value(state, "dphase", (r,))),
        str(concrete.value(state, "pphase", (r,))),
        str(concrete.value(state, "poll", (r,))),
    )
