"""Several variants' checks at once: one job per variant (``check --all``).

BMC and proofs are CPU-bound and independent per variant, so ``--workers`` runs the jobs in
parallel: locally each in a fresh fork of this process (``distrib/fork.py``'s
``ForkExecutor``: it inherits the job's protocols, built once here, and returns plain
data), or one Ray task per variant (``--ray``: the task builds the protocols itself). A job
is a whole variant, not a (variant, invariant) pair: BMC shares one incremental solver
across a variant's invariants, and split runs could return other (equally valid)
counterexamples than a local run. While a job runs, its phases' starts reach the caller's
``progress`` (``distrib/executor.py``'s ``forwarded``): a result comes only at the job's end.

``prove --all --ray`` cuts its work the same way: one unit is one variant's proof (every
obligation of its inductive invariant), which Z3 discharges in one ``Prover``; the result
is plain data (the counterexample to induction names its protocol, switches and
description). A worker gets no state from this module: each unit carries what it checks,
the protocols or the user protocol's ``module:attr`` (``factory_of``), as its arguments.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from kvproof.checker.distrib.executor import (
    Executor,
    PoolExecutor,
    ProgressFn,
    SerialExecutor,
    Unit,
    forwarded,
    ordered,
)
from kvproof.checker.distrib.fork import ForkExecutor
from kvproof.checker.verify.driver import CheckJob, Protocols, built, run_job
from kvproof.checker.verify.protocols import factory_of, protocol_for
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.spec.variant import Variant


def work(
    job: CheckJob, protocols: Protocols | None, progress: ProgressFn | None = None
) -> VariantVerdict:
    """One job in a worker: its verdict as plain data (``protocols``: inherited, or None in
    a process that must build them, a Ray task or a spawned worker)."""
    return run_job(job, protocols or built(job), progress).with_protocols(None, None)


def _cost(unit: Unit) -> tuple[int, int]:
    """Longest first, so that no worker starts the slowest job last (the results come back
    in the order of ``jobs`` whatever this order): a fixed variant's BMC runs every depth
    with every invariant holding, then a proof and a necessity check per assumption."""
    job: CheckJob = unit.args[0]
    heavy = not job.variant.buggy and (job.options.prove != "never" or job.options.necessity)
    return (0 if heavy else 1, -job.depth)


def run_jobs(
    jobs: Sequence[tuple[CheckJob, Protocols]],
    *,
    workers: int,
    on_done: Callable[[VariantVerdict], None] | None = None,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
) -> list[VariantVerdict]:
    """Every job's verdict, in the order of ``jobs``: in this process, on ``workers`` local
    forks, or on ``executor`` (a Ray cluster: ``check --all --ray``). ``progress`` hears
    every phase of every job as it begins; ``on_done`` sees each verdict as it arrives."""
    serial = executor is None and (workers <= 1 or len(jobs) <= 1)
    forks = executor is None and hasattr(os, "fork")
    slots = min(workers, len(jobs))
    pool: Executor = executor or (
        SerialExecutor() if serial else ForkExecutor(slots) if forks else PoolExecutor(slots)
    )
    results: dict[int, VariantVerdict] = {}

    def arrived(i: int, out: VariantVerdict) -> None:
        protocols = jobs[i][1]
        results[i] = out.with_protocols(protocols.safety, protocols.liveness)
        if on_done:
            on_done(results[i])

    owned = pool if executor is None else contextlib.nullcontext()  # closed at the end
    with owned, forwarded(progress, pool.forwards) as sink:
        units = [
            Unit(i, work, (job, protocols if forks or serial else None, sink))
            for i, (job, protocols) in enumerate(jobs)
        ]
        # in this process in the order given, as a user listed them; else longest first
        fed = units if serial else sorted(units, key=_cost)
        for _ in ordered(pool, fed, on_arrival=arrived):
            pass
    return [results[i] for i in range(len(jobs))]  # the order of ``jobs``, not of ``fed``


def prove_unit(variant: Variant, protocol: str | None, timeout_ms: int) -> Any:
    from kvproof.model.search.induction import prove

    return prove(protocol_for(variant, factory_of(protocol)), timeout_ms=timeout_ms)


def prove_variants(
    variants: Sequence[Variant],
    executor: Executor,
    *,
    protocol: str | None = None,
    timeout_ms: int = 60_000,
    on_done: Callable[[Variant, Any], None] | None = None,
) -> list[Any]:
    """Each variant's ``ProofResult``, in the order of ``variants`` (``protocol``: a user
    protocol's ``module:attr``, each unit builds its own)."""
    units = [Unit(i, prove_unit, (v, protocol, timeout_ms)) for i, v in enumerate(variants)]
    out = []
    for i, result in ordered(executor, units):
        if on_done is not None:
            on_done(variants[i], result)
        out.append(result)
    return out
