"""Checking several variants at once: one worker process per variant (``check --all``).

BMC and proofs are CPU-bound and independent per variant, so ``--workers`` runs them in
parallel (``--ray``: one Ray task per variant). Local workers are forked (the protocol
factory, user protocols included, is inherited rather than pickled); each returns its results,
which are plain data (BMC results and traces, the proof and its CTI), and the parent builds
the protocol for its report. A unit is a whole variant, not a (variant,
invariant) pair: BMC shares one incremental solver across a variant's invariants, and split
runs could return other (equally valid) counterexamples than a local run. While a unit runs,
its stages (BMC depth k, proof, necessity) reach the caller's ``progress`` callback through
``distrib/events.py``: a result alone comes only at the unit's end, minutes in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvproof.checker.distrib.events import ProgressFn, forwarded, forwarding_kind
from kvproof.checker.distrib.executor import Executor, PoolExecutor, Unit, ordered
from kvproof.checker.distrib.fork import fork_call
from kvproof.checker.verify.checking import (
    ProtocolFactory,
    VariantCheck,
    check_variant,
    protocol_for,
)
from kvproof.spec.variant import Variant


@dataclass(frozen=True)
class CheckJob:
    variant: Variant
    requests: int
    pages: int
    depth: int
    invariants: tuple[str, ...] | None
    prove: str  # "auto" (fixed variants with strengthening), "always", "never"
    without: tuple[str, ...] = ()  # assumptions dropped (--without)
    necessity: bool = True  # assess whether each assumption in force is needed
    protocol: str | None = None  # a user protocol's 'module:attr' (None: kvproof's handoff)
    depth_given: bool = False  # --depth: BMC to exactly that depth, no portfolio


_FACTORY: ProtocolFactory | None = None  # set before forking; inherited by the workers


def run_job(
    job: CheckJob,
    factory: ProtocolFactory | None = None,
    progress: ProgressFn | None = None,
) -> VariantCheck:
    """One variant's check; ``progress(variant, stage, detail)`` hears each stage begin
    ("start", "bmc" with the depth, "proof", "necessity" with the assumption)."""
    from kvproof.checker.verify import portfolio

    name = job.variant.name
    say = progress or _silent
    say(name, "start", "")
    if portfolio.settles(job, bool(protocol_for(job.variant, factory, job.without).strengthening)):
        check = portfolio.portfolio_check(job, factory, say)
        return _assessed(job, factory, check, progress)
    subset = None
    if job.variant.buggy and job.prove != "never" and not job.depth_given:
        # the holding invariants' proof, beside the BMC
        subset = portfolio.background_subset(job.depth)
    check = check_variant(
        job.variant,
        requests=job.requests,
        pages=job.pages,
        depth=job.depth,
        factory=factory,
        invariants=list(job.invariants) if job.invariants else None,
        without=job.without,
        on_depth=lambda k: say(name, "bmc", str(k)),
        settled=subset,
    )
    # A fixed variant is proved for all sizes too ("BMC + proof where available"):
    # "holds to depth 12" is not what an engine team needs to hear.
    fixed = not job.variant.buggy and bool(check.protocol.strengthening)
    if job.prove == "always" or (job.prove == "auto" and fixed):
        from kvproof.model.search.induction import prove

        say(name, "proof", "")
        check = VariantCheck(
            check.variant, check.protocol, check.bmc, prove(check.protocol), without=job.without
        )
    return _assessed(job, factory, check, progress)


def _assessed(
    job: CheckJob,
    factory: ProtocolFactory | None,
    check: VariantCheck,
    progress: ProgressFn | None = None,
) -> VariantCheck:
    # Necessity is assessed where an assumption carries a verdict of safety: fixed variants.
    # (A buggy variant's assumptions only narrow its environment to the bug's.) It looks to
    # the job's depth even when the portfolio's proof settled the verdict at a shallow one.
    if job.necessity and factory is None and job.variant.assume and not job.variant.buggy:
        from kvproof.checker.verify.checking import assess_assumptions

        check = assess_assumptions(
            check, prove_it=check.proof is not None, depth=job.depth, progress=progress
        )
    return check


def _silent(variant: str, stage: str, detail: str) -> None:
    pass


_ISOLATE = False  # set before forking a local pool: each unit then runs in a fresh fork


def _work(job: CheckJob, progress: ProgressFn | None = None) -> tuple[Any, Any, Any, str]:
    return _isolated(_work_here, job, progress) if _ISOLATE else _work_here(job, progress)


def _isolated(fn: Callable[..., Any], job: CheckJob, *more: Any) -> Any:
    """``fn(job, *more)`` in a fresh fork of this (Z3-clean) worker. Z3 has one global context per
    process that keeps growing, so a worker that already checked other variants checks the
    next one slower (dead-prefill-free's BMC: 16 s alone, 26 s after -guarded) and may pick
    another, equally short, counterexample: a fork per unit makes each variant's result the
    one ``kvproof check VARIANT`` gives, whatever the scheduling."""
    return fork_call(fn, job, *more).result(f"the check of {job.variant.name}")


def _work_here(job: CheckJob, progress: ProgressFn | None = None) -> tuple[Any, Any, Any, str]:
    # A forked worker inherits the parent's factory; a Ray worker (a fresh process, maybe
    # on another node) loads the user's protocol from its 'module:attr' itself.
    factory = _FACTORY
    if factory is None and job.protocol is not None:
        from kvproof.checker.verify.protocols import load_protocol

        factory = load_protocol(job.protocol).factory
    check = run_job(job, factory, progress)
    return check.bmc, check.proof, check.necessity, check.settled_by


def _cost(unit: Unit) -> tuple[int, int]:
    """Longest first, so that no worker starts the slowest unit last (the results come back
    in the order of ``jobs`` whatever this order): a fixed variant's BMC runs every depth
    with every invariant holding, then a proof and a necessity check per assumption."""
    job: CheckJob = unit.args[0]
    heavy = not job.variant.buggy and (job.prove != "never" or job.necessity)
    return (0 if heavy else 1, -job.depth)


def run_jobs(
    jobs: Sequence[CheckJob],
    *,
    workers: int,
    factory: ProtocolFactory | None = None,
    on_done: Callable[[VariantCheck], None] | None = None,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
) -> list[VariantCheck]:
    """Every job's check, in the order of ``jobs``: in this process, on a local pool of
    ``workers``, or on ``executor`` (a Ray cluster: ``check --all --ray``). ``progress``
    hears every stage of every job as it begins, forwarded from the workers while they run
    (``distrib/events.py``); ``on_done`` sees each check as it arrives."""
    if executor is None and (workers <= 1 or len(jobs) <= 1):
        out = []
        for job in jobs:
            check = run_job(job, factory, progress)
            if on_done:
                on_done(check)
            out.append(check)
        return out
    global _FACTORY, _ISOLATE
    _FACTORY = factory
    _ISOLATE = executor is None and hasattr(os, "fork")
    results: dict[int, VariantCheck] = {}

    def arrived(i: int, out: tuple[Any, Any, Any, str]) -> None:
        bmc, proof, found, settled_by = out
        protocol = protocol_for(jobs[i].variant, factory, jobs[i].without)
        results[i] = VariantCheck(
            jobs[i].variant,
            protocol,
            bmc,
            proof,
            without=jobs[i].without,
            necessity=found,
            settled_by=settled_by,
        )
        if on_done:
            on_done(results[i])

    pool = executor if executor is not None else PoolExecutor(min(workers, len(jobs)))
    try:
        with forwarded(progress, forwarding_kind(executor)) as sink:
            units = [Unit(i, _work, (job, sink)) for i, job in enumerate(jobs)]
            for _ in ordered(pool, sorted(units, key=_cost), on_arrival=arrived):
                pass
    finally:
        if executor is None:
            pool.close()
        _FACTORY = None
        _ISOLATE = False
    return [results[i] for i in range(len(jobs))]
