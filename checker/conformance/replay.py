"""Conformance replay: run a model trace on the reference engine, step by step.

The trace's steps go through a ``Lockstep`` (``lockstep.py``: model and engine side by side,
every step checked). After the trace the engine drains to every client's answer (below),
then the output oracle (``refimpl.oracle``: single-node tokens, canaries of
``mapping.py``) judges every 200; the report (``verdict.py``) says what clients saw: a
leak, a wrong answer, or engine state only.

A lasso (issue #29 item 3) runs its stem once, then its loop ``loops`` times. The model's
loop returns to the state after the stem and repeats forever; the engine cannot run
forever, so replay runs the loop ``k`` rounds in lockstep and, after each, asks what a
liveness counterexample claims: that the engine is back where the loop started (its
abstraction equals the model's state at ``loop``), and that what the loop never resolves
(``checker/verify/liveness.py``) is still unresolved on the engine's own state: the page is
still off decode's free list and in the request's table, the request still has no answer.
Both read ``Cluster.view()`` and the allocator, the engine's own face, never the model.

    report = replay_trace(read_jsonl(path), load_variant("sglang-0.5.19-pd"))
    report.exit_code  # 1: divergence, leak, wrong answer or an invariant broken on the engine
    report.shows  # "leak": another tenant's canary in a response
"""

from __future__ import annotations

from collections.abc import Callable

from kvproof.checker.conformance.lockstep import EngineFactory, Lockstep
from kvproof.checker.conformance.mapping import normalize, reservations
from kvproof.checker.conformance.verdict import Divergence, LassoRun, ReplayReport, loop_step
from kvproof.checker.verify.liveness import WAITING, Forever, forever
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import Trace
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.oracle import Reference
from kvproof.spec.variant import Variant

DEFAULT_LOOPS = 3


def replay_trace(
    trace: Trace,
    variant: Variant,
    *,
    engine: EngineFactory = Cluster,
    drain: bool = True,
    max_new_tokens: int = 32,
    reference: Reference | None = None,
    loops: int = DEFAULT_LOOPS,
) -> ReplayReport:
    """Replay ``trace`` on the reference engine configured by ``variant``; a lasso's loop
    ``loops`` times after its stem."""
    lasso = trace.loop is not None  # a liveness counterexample: the liveness build
    protocol = protocol_of(variant, liveness=lasso)
    trace = normalize(trace, protocol)
    report = ReplayReport(variant.name, trace)
    try:  # the engine under test may raise, even while warming up: that is a finding
        ls = Lockstep(
            variant,
            trace.sizes,
            trace.init,
            _reserve(trace, variant),
            engine=engine,
            max_new_tokens=max_new_tokens,
            shared_head=_shared_head(trace),
            liveness=lasso,
        )
        report.offset = ls.rids.offset
        report.divergence = ls.check_state(0, "init")
        if trace.loop is None:
            _run(ls, trace.steps, report)
        else:  # a lasso: no drain, the run never leaves its loop
            _run_lasso(ls, trace, trace.loop, report, loops)
            drain = False
        if drain and report.divergence is None:
            report.drained, report.divergence = drain_to_answers(ls)
        report.responses = ls.answers(reference)
    except Exception as exc:
        at = report.steps_applied + 1
        if trace.loop is not None:  # rounds of the loop go on counting
            at = loop_step(trace.loop, len(trace.steps) - trace.loop, at)
        where = f"step {at}: {trace.steps[at - 1]}" if at <= len(trace.steps) else "drain"
        report.crash = f"the engine raised {type(exc).__name__}: {exc} (at {where})"
    return report


def _shared_head(trace: Trace) -> frozenset[int]:
    """The requests whose prompts open with the radix cache's shared page: those that hit
    it and those that insert a page into the tree. A request doing neither is another
    application's tenant (its prompt is its own from the first page), so KV it writes into
    a freed page the tree still maps shows its canary, not the system prompt everyone has."""
    hits = {args[0] for args, on in trace.init.get("hit", {}).items() if on}
    inserts = {s.args[0] for s in trace.steps if s.action == "insert"}
    return frozenset(hits | inserts)


def _reserve(trace: Trace, variant: Variant) -> tuple[int, ...]:
    """The reservations a fuzz walk drew (kept in the trace), else those the trace implies."""
    derived = reservations(trace, variant.switches)
    stored = trace.meta.get("reserve")
    if isinstance(stored, list) and len(stored) == len(derived):
        # A request that sent must reserve what it allocated; the others keep their draw.
        return tuple(max(d, int(s)) for d, s in zip(derived, stored, strict=True))
    return derived


def _run(ls: Lockstep, steps: tuple[ActionInstance, ...], report: ReplayReport) -> bool:
    """Apply ``steps`` in lockstep; False once stopped (here or before: a divergence)."""
    if report.divergence is not None:
        return False
    for inst in steps:
        status, div = ls.apply(inst)
        if status == "not_enabled":
            report.not_enabled = f"step {ls.step_no + 1}: {inst}"
            report.why_not = ls.describe_request(inst.args[0])
            return False
        if status == "divergence":
            report.divergence = div
            return False
        report.steps_applied = ls.step_no
        for found, names in (
            (report.model_violations, ls.model_violated()),
            (report.engine_violations, ls.engine_violated()),
        ):
            seen = {name for _, name in found}
            found += [(ls.step_no, name) for name in names if name not in seen]
    return True


def _run_lasso(ls: Lockstep, trace: Trace, loop: int, report: ReplayReport, loops: int) -> None:
    """The stem once, then ``loops`` rounds of the loop, each checked to come back to the
    loop's start with what the loop never resolves still unresolved on the engine."""
    found = forever(trace, ls.protocol)
    rounds, resolved = 0, None
    if _run(ls, trace.steps[:loop], report):
        # A stutter (an empty loop) needs no more: after every step the lockstep already
        # checked that the engine can take no step the model forbids.
        start = ls.state
        for k in range(1, loops + 1):
            if not _run(ls, trace.steps[loop:], report):
                break
            # The engine's state after a round equals the model's state at the loop's start.
            why = "after the loop the engine is not back in the state the loop started from"
            report.divergence = ls.check_state(ls.step_no, f"loop round {k}", start, why)
            if report.divergence is not None:
                break
            gone = [f for f in found if not _unresolved_on_engine(ls, f)]
            if gone:
                resolved = f"{gone[0].text()} in the model, but the engine resolved it"
                report.divergence = Divergence(ls.step_no, f"loop round {k}", resolved)
                break
            rounds = k
    report.lasso = LassoRun(loop, loops, rounds, tuple(f.text() for f in found), resolved)


def _unresolved_on_engine(ls: Lockstep, f: Forever) -> bool:
    """``f`` still holds on the engine: read from its view and allocator, not the model."""
    view = ls.cluster.view()
    rid = f.r + ls.rids.offset
    req = view.requests[rid]
    if f.kind == "held":
        page = f.p if f.p is not None else -1
        return view.pages[page].owner == rid and not ls.cluster.is_free("decode", page)
    if f.kind == "unscheduled":
        return req.dphase in WAITING
    return req.dphase != "idle" and req.resp == "none"


# -- after the trace: the drain (every client gets its answer) -------------------------
def _reacts_to_failed(ls: Lockstep, inst: ActionInstance, rid: int) -> bool:
    """Decode's own answer to a failure the trace already injected (KVPoll Failed) is to
    abort the request: that is no new fault, and it gives the client its answer."""
    return ls.cluster.status(rid).poll == "failed"


# The environment's moves (``Protocol.faults``) are faults the trace may take, never the
# drain; except where the rule for a fault says the engine takes it itself.
REACTIONS: dict[str, Callable[[Lockstep, ActionInstance, int], bool]] = {
    "abort": _reacts_to_failed,
}
# Completions first (a posted write lands; an ABORT is seen and acknowledged), then the
# request closest to its answer: this order lets a late write land before its victim reads.
ORDER: tuple[str, ...] = ("land", "abort_seen", "ack", "abort", "finish", "step", "commit")
ORDER += ("done", "post", "share", "send", "alloc", "arrive")
# Decode's radix cache (issue 12): a hit locks its head page before ``send``; inserting into
# the tree is optional work, taken only when nothing else is enabled.
ORDER += ("insert",)
MAX_STEPS = 10_000


def candidates(ls: Lockstep) -> list[ActionInstance]:
    out = []
    faults = ls.protocol.faults
    for ev in ls.cluster.enabled(alloc="top"):
        inst = ls.rids.action(ev)
        if inst is None or ls.excluded(inst):
            continue
        reacts = REACTIONS.get(inst.action)
        if inst.action in faults and not (reacts and reacts(ls, inst, ev.rid)):
            continue
        if inst.action in ("step", "finish"):
            full = ls.cluster.status(ev.rid).generated >= ls.max_new_tokens
            if full != (inst.action == "finish"):
                continue
        out.append(inst)
    return out


def drain_to_answers(ls: Lockstep) -> tuple[tuple[str, ...], Divergence | None]:
    """After the trace: the engine runs on to quiescence, so that every client gets its answer.

    A counterexample stops at the step that breaks an invariant: often a stray write nobody has
    read yet, or a commit before the first decode step. Whether a client *sees* it is decided
    after that, so replay lets the run finish: every request of the trace arrives, transfers,
    commits and decodes up to ``max_new_tokens``; posted writes land; aborts are acknowledged.
    No new fault is injected (no fail, timeout, give-up or expiry; an abort only where decode
    sees its transfer failed), and the choice is deterministic: completions first, then the
    request nearest its answer, the lowest request first, the allocator's own page. A pool too
    small for two half-allocated requests stops the drain with those clients unanswered
    (``status`` None in the responses). Each step is a model action applied in lockstep
    (``Lockstep.apply``), so the drain is checked like the trace; it adds no model violation
    to the report (the trace's verdict is the model's), only the clients' answers.

    Returns the steps taken, and the divergence that stopped it or None."""
    taken: list[str] = []
    for _ in range(MAX_STEPS):
        cands = candidates(ls)
        if not cands:
            break
        inst = min(cands, key=lambda i: (ORDER.index(i.action), i.args))
        status, div = ls.apply(inst)
        taken.append(str(inst))
        if status != "ok":  # the engine offered it: a step the model refuses diverges too
            why = "the engine performs it, the model does not enable it (drain)"
            return tuple(taken), div or Divergence(ls.step_no + 1, str(inst), why)
    return tuple(taken), None
