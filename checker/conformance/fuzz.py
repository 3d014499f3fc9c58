"""Model-guided fuzzing: random walks of model and engine in lockstep, shrunk by Hypothesis.

Each walk (``walk.py``: what it checks, what a finding is called) is a run of the model
forced on the engine. Hypothesis (``hypothesis.find``) shrinks a failing walk to a minimal
one, which is saved as a trace for ``kvproof replay``.

Work is cut into batches with their own seeds, so a run's result does not depend on the
number of worker processes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvproof.checker.conformance.lockstep import EngineFactory, ModelSide
from kvproof.checker.conformance.walk import SIZES, Walk, WalkResult, run_walk, trim, walks
from kvproof.checker.distrib.campaign import CampaignLog
from kvproof.checker.distrib.executor import Executor, Unit, make_executor, ordered
from kvproof.checker.traces.tracefile import write_jsonl
from kvproof.model.handoff import protocol_of
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Variant

if TYPE_CHECKING:
    from kvproof.refimpl.single_node import SingleNode


@dataclass
class FuzzStats:
    traces: int = 0
    steps: int = 0
    faults: int = 0
    divergences: int = 0
    leaks: int = 0  # a response carried another tenant's canary
    violations: int = 0  # an invariant broken, no response shows it
    crashes: int = 0
    seconds: float = 0.0
    first_finding_s: float | None = None
    wrong_answers: int = 0  # a 200 unlike the single node's, no foreign canary

    def add(self, other: FuzzStats) -> None:
        for name in ("traces", "steps", "faults", *COUNTERS.values()):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def count(self, kind: str, n: int = 1) -> None:
        """``n`` more findings of ``kind`` (a ``WalkResult.kind``)."""
        setattr(self, COUNTERS[kind], getattr(self, COUNTERS[kind]) + n)

    def recount(self, batch: FuzzStats, kind: str) -> None:
        """The finding ``batch`` counted (as found, before shrinking) counts as ``kind``,
        what the shrunk finding shows: the counters agree with the finding reported."""
        for was, key in COUNTERS.items():
            if getattr(batch, key):
                self.count(was, -getattr(batch, key))
                self.count(kind)
                return


# A finding's kind -> its counter (the JSON keys of ``kvproof fuzz --json``).
COUNTERS = {
    "divergence": "divergences",
    "leak": "leaks",
    "wrong_answer": "wrong_answers",
    "violation": "violations",
    "crash": "crashes",
}


@dataclass
class FuzzResult:
    variant: str
    stats: FuzzStats
    finding: WalkResult | None = None
    seed: int = 0
    batches: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.finding is not None else 0


# -- search ------------------------------------------------------------------------------


class RememberedAnswers:
    """A ``SingleNode`` that generates each (prompt, length) once, for the walks of a batch.

    The oracle (``refimpl/oracle.py``) asks the single node what a correct engine says for
    each prompt that got a 200. In a batch the same prompts come back walk after walk (a
    request's prompt depends only on its reservation and its canary), and generating them
    again was about a twelfth of a walk's time (issue 30, cProfile of a batch). The single
    node writes every position before it reads it, so its answer depends only on the prompt
    and the length asked: a remembered answer is the answer it would give again."""

    def __init__(self, node: SingleNode) -> None:
        self._once = functools.cache(lambda prompt, n: node.generate(list(prompt), n))

    def generate(self, prompt: list[int] | tuple[int, ...], max_new_tokens: int) -> list[int]:
        return list(self._once(tuple(prompt), max_new_tokens))


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
    device: str = "cpu",
) -> tuple[FuzzStats, WalkResult | None]:
    """Up to ``n`` walks from ``seed``; the first failing one, shrunk (or None).
    ``shrink=False``: the first failing walk as found (a campaign's workers: the driver
    shrinks the one finding it reports). Torch's thread count is the caller's: the CLI and
    the campaign executors' workers set one thread (tiny models; issue 16 item 6)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    from kvproof.refimpl.models import build_model
    from kvproof.refimpl.single_node import SingleNode

    start = time.perf_counter()
    model = build_model("echo", seed=0, device=device)
    reference = RememberedAnswers(SingleNode(model, page_size=16, num_pages=64, device=device))
    if device != "cpu":
        engine = functools.partial(engine, device=device)
    stats = FuzzStats()
    side = ModelSide.of(variant, sizes)  # compiled once for the batch's walks
    kw: dict[str, Any] = {"sizes": sizes, "faults": faults, "engine": engine, "model": model}
    kw.update(reference=reference, side=side)

    @functools.cache  # Hypothesis re-runs the final example
    def fails(walk: Walk) -> bool:
        # Shrinking budget: past it every new candidate counts as passing, so Hypothesis
        # settles on the smallest failure so far (trim() finishes the job cheaply).
        found_at = stats.first_finding_s
        if found_at is not None and time.perf_counter() - start - found_at > shrink_budget_s:
            return False
        # Whether it fails is all Hypothesis needs: no drain to the clients' answers here.
        res = run_walk(variant, walk, answers=False, **kw)
        if stats.first_finding_s is None or not res.failed:
            stats.traces += 1
            stats.steps += len(res.trace.steps)
            stats.faults += res.faults
            if res.failed:
                stats.first_finding_s = time.perf_counter() - start
                # The first finding is counted under what the clients saw (a drain).
                res = run_walk(variant, walk, **kw)
                stats.count(res.kind)  # type: ignore[arg-type]
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
        with _no_local_constants():
            walk = find(walks(sizes, variant), fails, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        stats.seconds = time.perf_counter() - start
        return stats, None
    res = run_walk(variant, walk, **kw)
    if shrink:
        res = trim(variant, walk, res, **kw)
    res.trace.meta["seed"] = seed
    stats.seconds = time.perf_counter() - start
    return stats, res


@contextlib.contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis also draws integers it finds in the source of the local modules loaded
    so far (``providers._get_local_constants``, Hypothesis 6.170): a batch's walks would
    then depend on what its process happened to import (a pytest run, a forked pool, a
    fresh Ray worker each differ). Pinned to none, a seed gives the same walks anywhere."""
    try:
        from hypothesis.internal.conjecture import providers

        get, cache, empty = (
            providers._get_local_constants,
            providers.CONSTANTS_CACHE,
            providers.Constants(),
        )
    except (ImportError, AttributeError):  # pragma: no cover - an older Hypothesis
        yield
        return
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # values computed with earlier constants
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()


def _nth_batch(traces: int, i: int) -> int | None:
    """The walks of batch ``i`` of a budget of ``traces`` walks, or None past its end:
    asked for one at a time, as a slot frees up, since a budget of a billion walks is ten
    million batches, which as a list (and a unit each) grew to 3.8 GB before the first
    walk (issue 41)."""
    # The plan depends on the budget only, never on the number of workers (nor on Ray):
    # the same seeds give the same batches, so the same result, on any executor.
    size = max(10, min(100, traces // 4))
    full, rest = divmod(traces, size)
    if 0 <= i < full:
        return size
    return rest if i == full and rest else None


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
    device: str = "cpu",
    executor: Executor | None = None,
    resume: Path | None = None,
) -> FuzzResult:
    """Up to ``traces`` walks; stops at the first finding (shrunk).

    Batches run on ``executor`` (default: this process, or a local pool of ``workers``) and
    merge in batch order, so the finding is the serial run's. Shrinking happens once, here.
    ``resume``: a campaign folder; batches it records are not run again, and every finding
    is written to its ``findings/`` as soon as it arrives.
    """
    start = time.perf_counter()
    total = FuzzStats()
    result = FuzzResult(variant.name, total, seed=seed)
    log = _campaign(resume, variant, seed, faults, sizes) if resume is not None else None
    pool = executor if executor is not None else make_executor(workers)
    first = budget = 0  # this round's first batch and its budget of walks
    hit: tuple[int, FuzzStats, Any] | None = None  # the batch, its stats, its finding
    found_at: dict[int, float] = {}

    def plan_of(index: int) -> Any:
        """(walks, seed) of this round's batch ``index``, or None past the round's end."""
        n = _nth_batch(budget, index - first)
        return None if n is None else (n, seed * 1_000_003 + index)

    def units() -> Iterator[Unit]:  # lazily: a unit is made when a slot asks for one
        index = first
        while (plan := plan_of(index)) is not None:
            yield Unit(index, search_batch, (variant, *plan), kw, gpus)
            index += 1

    def arrived(index: int, out: tuple[FuzzStats, WalkResult | None]) -> None:
        stats, found = out
        if found is not None and stats.first_finding_s is not None:
            # When the batch found it: its arrival, less the time spent after the finding.
            now = time.perf_counter() - start
            found_at[index] = now - (stats.seconds - stats.first_finding_s)
        if log is not None:
            n, s = plan_of(index)
            if found is not None:
                path = log.findings / f"{variant.name}.batch-{index}.jsonl"
                write_jsonl(found.trace, path, protocol=protocol_of(variant, assumed=False))
            log.record(index, {"walks": n, "seed": s, "stats": asdict(stats), "found": bool(found)})
        if on_batch is not None:
            on_batch(stats)

    kw = {"faults": faults, "sizes": sizes, "engine": engine, "device": device, "shrink": False}
    gpus = 1.0 if device.startswith("cuda") else 0.0
    try:
        # Hypothesis may end a batch early (it skips walks it has already run): top up with
        # more batches until the budget of walks is spent.
        for _ in range(10):
            if total.traces >= traces or hit is not None:
                break
            first, budget = result.batches, traces - total.traces
            done = _done(log, plan_of, on_batch)
            for index, (stats, found) in ordered(
                pool, units(), done=done, stops=lambda r: r[1] is not None, on_arrival=arrived
            ):
                total.add(stats)
                result.batches += 1
                if found is not None:
                    hit = index, stats, found
                    total.first_finding_s = found_at.get(index)
                    break
    finally:
        if executor is None:
            pool.close()
    if hit is not None:
        # Shrinking happens once, on the driver: the batch again from its seed (the same
        # walks, so the same first failure), now with Hypothesis's shrinking. A driver
        # without a GPU shrinks a --device cuda finding on the CPU (recorded in the trace).
        index, hit_stats, unshrunk = hit
        n, s = plan_of(index)
        here = device if device == "cpu" or _has_cuda() else "cpu"
        _, shrunk = search_batch(
            variant, n, s, faults=faults, sizes=sizes, engine=engine, device=here
        )
        # None cannot happen with pinned constants; never lose the finding (one found
        # here, not a resumed campaign's record of one)
        result.finding = shrunk if shrunk is not None or unshrunk is True else unshrunk
        if result.finding is not None:
            if device != "cpu":
                result.finding.trace.meta["shrunk_on"] = here
            total.recount(hit_stats, result.finding.kind)  # type: ignore[arg-type]
    total.seconds = time.perf_counter() - start
    return result


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _campaign(
    folder: Path, variant: Variant, seed: int, faults: bool, sizes: dict[str, int]
) -> CampaignLog:
    switches = asdict(variant.switches) if is_dataclass(variant.switches) else {}
    settings = {"variant": variant.name, "switches": {k: repr(v) for k, v in switches.items()}}
    return CampaignLog(folder, settings | {"seed": seed, "faults": faults, "sizes": sizes})


def _done(
    log: CampaignLog | None,
    plan_of: Callable[[int], tuple[int, int] | None],
    on_batch: Callable[[FuzzStats], None] | None,
) -> dict[int, tuple[FuzzStats, Any]]:
    """Batches the campaign folder already has (same walks and seed as ``plan_of`` gives
    this round's batch of that index): their stats, and ``True`` for a finding (shrinking
    re-runs that batch on the driver)."""
    out: dict[int, tuple[FuzzStats, Any]] = {}
    for index, row in (log.done() if log else {}).items():
        if plan_of(index) == (row.get("walks"), row.get("seed")):
            out[index] = (FuzzStats(**row["stats"]), True if row.get("found") else None)
            if on_batch is not None:
                on_batch(out[index][0])
    return out


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))
