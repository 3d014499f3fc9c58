"""Checking several variants at once: one worker process per variant (``check --all``).

BMC and proofs are CPU-bound and independent per variant, so ``--workers`` runs them in
parallel. Workers are forked (the protocol factory, user protocols included, is inherited
rather than pickled); each returns its plain results (BMC results and traces, the proof),
and the parent re-attaches the protocol, which holds functions and does not cross processes.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

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


_FACTORY: ProtocolFactory | None = None  # set before forking; inherited by the workers


def run_job(job: CheckJob, factory: ProtocolFactory | None = None) -> VariantCheck:
    check = check_variant(
        job.variant,
        requests=job.requests,
        pages=job.pages,
        depth=job.depth,
        factory=factory,
        invariants=list(job.invariants) if job.invariants else None,
        without=job.without,
    )
    # A fixed variant is proved for all sizes too ("BMC + proof where available"):
    # "holds to depth 12" is not what an engine team needs to hear.
    fixed = not job.variant.buggy and bool(check.protocol.strengthening)
    if job.prove == "always" or (job.prove == "auto" and fixed):
        from kvproof.model.induction import prove

        check = VariantCheck(
            check.variant, check.protocol, check.bmc, prove(check.protocol), without=job.without
        )
    # Necessity is assessed where an assumption carries a verdict of safety: fixed variants.
    # (A buggy variant's assumptions only narrow its environment to the bug's.)
    if job.necessity and factory is None and job.variant.assume and not job.variant.buggy:
        from kvproof.checker.verify.checking import assess_assumptions

        check = assess_assumptions(check, prove_it=check.proof is not None)
    return check


def _work(job: CheckJob) -> tuple[Any, Any, Any]:
    check = run_job(job, _FACTORY)
    proof = check.proof
    if proof is not None and proof.cti is not None:
        proof = dataclasses.replace(proof, cti=dataclasses.replace(proof.cti, protocol=None))
    return check.bmc, proof, check.necessity


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
            bmc, proof, found = fut.result()
            protocol = protocol_for(jobs[i].variant, factory, jobs[i].without)
            if proof is not None and proof.cti is not None:
                proof = dataclasses.replace(
                    proof, cti=dataclasses.replace(proof.cti, protocol=protocol)
                )
            check = VariantCheck(
                jobs[i].variant, protocol, bmc, proof, without=jobs[i].without, necessity=found
            )
            results[i] = check
            if on_done:
                on_done(check)
    return [results[i] for i in range(len(jobs))]
