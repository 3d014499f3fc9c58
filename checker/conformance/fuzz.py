"""Model-guided fuzzing: random walks of model and engine in lockstep, shrunk by Hypothesis.

A walk draws each request's admission verdicts (``over_p``, ``over_d``) and decode
reservation, then a list of choices; at each step the next event is picked among those the
engine can perform now (each of which the model must also enable: ``Lockstep`` checks it),
so every walk is a run of the model forced on the engine. With ``faults`` the environment's
events join in: transfer failures, client disconnects, prefill aborts, drain timeouts,
lease expiries, writes landing out of order, duplicated status messages. Every step is
checked (model state = abstraction of the engine state); a finding is a divergence, a leak
(an invariant broken on the engine, or the output oracle) or a model invariant violation.
Hypothesis (``hypothesis.find``) shrinks a failing walk to a minimal one, which is saved as
a trace for ``kvproof replay``.

Work is cut into batches with their own seeds, so a run's result does not depend on the
number of worker processes.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from kvproof.checker.conformance.replay import EngineFactory
from kvproof.checker.conformance.walk import SIZES, Walk, WalkResult, run_walk, trim, walks
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Variant


@dataclass
class FuzzStats:
    traces: int = 0
    steps: int = 0
    faults: int = 0
    divergences: int = 0
    leaks: int = 0
    violations: int = 0
    crashes: int = 0
    seconds: float = 0.0
    first_finding_s: float | None = None

    def add(self, other: FuzzStats) -> None:
        for name in ("traces", "steps", "faults", "divergences", "leaks", "violations", "crashes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class FuzzResult:
    variant: str
    stats: FuzzStats
    finding: WalkResult | None = None
    seed: int = 0
    batches: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if self.finding is not None else 0


# -- search ------------------------------------------------------------------------------


def search_batch(
    variant: Variant,
    n: int,
    seed: int,
    *,
    faults: bool = False,
    sizes: dict[str, int] = SIZES,
    engine: EngineFactory = Cluster,
    shrink: bool = True,
    shrink_budget_s: float = 2.0,
) -> tuple[FuzzStats, WalkResult | None]:
    """Up to ``n`` walks from ``seed``; the first failing one, shrunk (or None)."""
    import torch
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    from kvproof.refimpl.model_base import build_model
    from kvproof.refimpl.single_node import SingleNode

    torch.set_num_threads(1)
    start = time.perf_counter()
    model = build_model("echo", seed=0, device="cpu")
    reference = SingleNode(model, page_size=16, num_pages=64)
    stats = FuzzStats()

    seen: dict[Walk, bool] = {}

    def fails(walk: Walk) -> bool:
        if walk in seen:  # Hypothesis re-runs the final example
            return seen[walk]
        # Shrinking budget: past it every new candidate counts as passing, so Hypothesis
        # settles on the smallest failure so far (trim() finishes the job cheaply).
        found_at = stats.first_finding_s
        if found_at is not None and time.perf_counter() - start - found_at > shrink_budget_s:
            return False
        seen[walk] = verdict = _fails(walk)
        return verdict

    def _fails(walk: Walk) -> bool:
        res = run_walk(
            variant,
            walk,
            sizes=sizes,
            faults=faults,
            engine=engine,
            model=model,
            reference=reference,
        )
        if stats.first_finding_s is None or not res.failed:
            stats.traces += 1
            stats.steps += len(res.trace.steps)
            stats.faults += res.faults
            if res.failed:
                stats.first_finding_s = time.perf_counter() - start
                kind = {
                    "divergence": "divergences",
                    "leak": "leaks",
                    "violation": "violations",
                    "crash": "crashes",
                }
                setattr(stats, kind[res.kind], getattr(stats, kind[res.kind]) + 1)  # type: ignore[index]
        return res.failed

    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    cfg = settings(
        max_examples=n,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    try:
        walk = find(walks(sizes, variant), fails, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        stats.seconds = time.perf_counter() - start
        return stats, None
    kw = {
        "sizes": sizes,
        "faults": faults,
        "engine": engine,
        "model": model,
        "reference": reference,
    }
    res = trim(variant, walk, run_walk(variant, walk, **kw), **kw)  # type: ignore[arg-type]
    res.trace.meta["seed"] = seed
    stats.seconds = time.perf_counter() - start
    return stats, res


def _batches(traces: int, workers: int) -> list[int]:
    size = max(10, min(100, traces // max(1, 4 * workers)))
    out = [size] * (traces // size)
    if traces % size:
        out.append(traces % size)
    return out


def fuzz(
    variant: Variant,
    *,
    traces: int = 200,
    seed: int = 0,
    faults: bool = False,
    workers: int = 1,
    sizes: dict[str, int] = SIZES,
    engine: EngineFactory = Cluster,
    on_batch: Callable[[FuzzStats], None] | None = None,
) -> FuzzResult:
    """Up to ``traces`` walks; stops at the first finding (shrunk)."""
    start = time.perf_counter()
    total = FuzzStats()
    result = FuzzResult(variant.name, total, seed=seed)
    # Hypothesis may end a batch early (it skips walks it has already run): top up with
    # more batches until the budget of walks is spent.
    for _ in range(10):
        if total.traces >= traces or result.finding is not None:
            break
        plan = _batches(traces - total.traces, workers)
        first = result.batches
        for stats, found in _run_batches(
            variant, plan, seed, first, faults, workers, sizes, engine
        ):
            if found is not None and total.first_finding_s is None and stats.first_finding_s:
                # When the batch found it: its end, less the time spent shrinking afterwards.
                batch_end = time.perf_counter() - start
                total.first_finding_s = batch_end - (stats.seconds - stats.first_finding_s)
            total.add(stats)
            result.batches += 1
            if on_batch is not None:
                on_batch(stats)
            if found is not None:
                result.finding = found
                break
    total.seconds = time.perf_counter() - start
    return result


def _batch_seed(seed: int, index: int) -> int:
    return seed * 1_000_003 + index


def _run_batches(
    variant: Variant,
    plan: list[int],
    seed: int,
    first: int,
    faults: bool,
    workers: int,
    sizes: dict[str, int],
    engine: EngineFactory,
) -> Iterator[tuple[FuzzStats, WalkResult | None]]:
    if workers <= 1:
        for i, n in enumerate(plan):
            yield search_batch(
                variant, n, _batch_seed(seed, first + i), faults=faults, sizes=sizes, engine=engine
            )
        return
    import multiprocessing

    # fork: the workers inherit the imported modules (spawn would re-import torch in each).
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending: set[Future[Any]] = set()
        todo = list(enumerate(plan))
        while todo or pending:
            while todo and len(pending) < workers:
                i, n = todo.pop(0)
                pending.add(
                    pool.submit(
                        search_batch,
                        variant,
                        n,
                        _batch_seed(seed, first + i),
                        faults=faults,
                        sizes=sizes,
                        engine=engine,
                    )
                )
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                stats, found = fut.result()
                yield stats, found
                if found is not None:
                    for other in pending:
                        other.cancel()
                    return


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))
