"""Conformance replay: run a model trace on the reference engine, step by step.

The trace's steps go through a ``Lockstep`` (``lockstep.py``: model and engine side by side,
every step checked). After the trace the engine drains to every client's answer
(``drain.py``), then the output oracle (``refimpl.oracle``: single-node tokens, canaries of
``canaries.py``) judges every 200; the report (``verdict.py``) says what clients saw: a
leak, a wrong answer, or engine state only.

    report = replay_trace(read_jsonl(path), load_variant("sglang-0.5.19-pd"))
    report.exit_code  # 1: divergence, leak, wrong answer or an invariant broken on the engine
    report.shows  # "leak": another tenant's canary in a response
"""

from __future__ import annotations

from kvproof.checker.conformance.drain import drain as drain_to_answers
from kvproof.checker.conformance.lasso import DEFAULT_LOOPS, loop_step, run_lasso
from kvproof.checker.conformance.lockstep import EngineFactory, Lockstep
from kvproof.checker.conformance.mapping import normalize, reservations
from kvproof.checker.conformance.responses import client_responses
from kvproof.checker.conformance.verdict import ReplayReport
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import Trace
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.oracle import Reference
from kvproof.spec.variant import Variant


def replay_trace(
    trace: Trace,
    variant: Variant,
    *,
    engine: EngineFactory = Cluster,
    drain: bool = True,
    max_new_tokens: int = 32,
    warmup: bool = True,
    reference: Reference | None = None,
    loops: int = DEFAULT_LOOPS,
) -> ReplayReport:
    """Replay ``trace`` on the reference engine configured by ``variant``; a lasso's loop
    ``loops`` times after its stem (``lasso.py``)."""
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
            warmup=warmup,
            max_new_tokens=max_new_tokens,
            shared_head=_shared_head(trace),
            liveness=lasso,
        )
        report.offset = ls.rids.offset
        if trace.loop is None:
            _run(ls, trace.steps, report)
        else:  # a lasso: no drain, the run never leaves its loop
            run_lasso(ls, trace, report, loops, _run)
            drain = False
        if drain and report.divergence is None and report.crash is None:
            report.drained, report.divergence = drain_to_answers(ls)
        report.findings = ls.oracle(reference)
        report.responses = client_responses(ls.cluster, ls.canaries, ls.rids.offset, reference)
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


def _run(
    ls: Lockstep, steps: tuple[ActionInstance, ...], report: ReplayReport, *, initial: bool = True
) -> bool:
    """Apply ``steps`` in lockstep (after checking the initial state); False once stopped."""
    div = ls.check_initial() if initial else None
    if div is not None:
        report.divergence = div
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
        _note_violations(ls, report)
    return True


def _note_violations(ls: Lockstep, report: ReplayReport) -> None:
    seen_m = {name for _, name in report.model_violations}
    seen_e = {name for _, name in report.engine_violations}
    for name in ls.model_violated():
        if name not in seen_m:
            report.model_violations.append((ls.step_no, name))
    for name in ls.engine_violated():
        if name not in seen_e:
            report.engine_violations.append((ls.step_no, name))
