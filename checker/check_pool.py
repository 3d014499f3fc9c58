"""Checking several variants at once: one worker process per variant (``check --all``).

BMC and proofs are CPU-bound and independent per variant, so ``--workers`` runs them in
parallel. Workers are forked (the protocol factory, user protocols included, is inherited
rather than pickled); each returns its results, which are plain data (BMC results and
traces, the proof and its CTI), and the parent builds the protocol for its report.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from kvproof.checker.checking import ProtocolFactory, VariantCheck, check_variant, protocol_for
from kvproof.model.induction import prove
from kvproof.spec.variant import Variant


@dataclass(frozen=True)
class CheckJob:
    variant: Variant
    requests: int
    pages: int
    depth: int
    invariants: tuple[str, ...] | None
    prove: str  # "auto" (fixed variants with strengthening), "always", "never"


_FACTORY: ProtocolFactory | None = None  # set before forking; inherited by the workers


def run_job(job: CheckJob, factory: ProtocolFactory | None = None) -> VariantCheck:
    check = check_variant(
        job.variant,
        requests=job.requests,
        pages=job.pages,
        depth=job.depth,
        factory=factory,
        invariants=list(job.invariants) if job.invariants else None,
    )
    # A fixed variant is proved for all sizes too ("BMC + proof where available"):
    # "holds to depth 12" is not what an engine team needs to hear.
    fixed = not job.variant.buggy and bool(check.protocol.strengthening)
    if job.prove == "always" or (job.prove == "auto" and fixed):
        check = VariantCheck(check.variant, check.protocol, check.bmc, prove(check.protocol))
    return check


def _work(job: CheckJob) -> tuple[Any, Any]:
    check = run_job(job, _FACTORY)
    return check.bmc, check.proof


def run_jobs(
    jobs: Sequence[CheckJob],
    *,
    workers: int,
    factory: ProtocolFactory | None = None,
    on_done: Callable[[VariantCheck], None] | None = None,
) -> list[VariantCheck]:
    """Every job's check, in the order of ``jobs``."""
    if workers <= 1 or len(jobs) <= 1:
        out = []
        for job in jobs:
            check = run_job(job, factory)
            if on_done:
                on_done(check)
            out.append(check)
        return out
    global _FACTORY
    _FACTORY = factory
    results: dict[int, VariantCheck] = {}
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx) as pool:
        futures = {pool.submit(_work, job): i for i, job in enumerate(jobs)}
        for fut in as_completed(futures):
            i = futures[fut]
            bmc, proof = fut.result()
            check = VariantCheck(
                jobs[i].variant, protocol_for(jobs[i].variant, factory), bmc, proof
            )
            results[i] = check
            if on_done:
                on_done(check)
    return [results[i] for i in range(len(jobs))]
