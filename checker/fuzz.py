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
from dataclasses import dataclass, field, replace
from typing import Any

from kvproof.checker.replay import Divergence, EngineFactory, Lockstep
from kvproof.model.instance import ActionInstance
from kvproof.model.trace import Trace
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import EVENT_NAMES
from kvproof.spec.variant import Variant

FAULT_ACTIONS = frozenset({"fail", "abort", "p_abort", "timeout", "expire"})
# Candidate order: progress first (choice 0, what shrinking tends to, moves the run on).
ORDER = {name: i for i, name in enumerate(EVENT_NAMES)}
SIZES = {"Req": 2, "Page": 3}
MAX_STEPS = 40
MAX_NEW_TOKENS = 4
FAULT_ODDS = 4  # one choice in four injects a fault, when one is possible


@dataclass(frozen=True)
class Walk:
    over_p: tuple[bool, ...]
    over_d: tuple[bool, ...]
    reserve: tuple[int, ...]
    length: int  # steps to take (the run stops earlier at quiescence or a finding)
    choices: tuple[int, ...]  # which candidate at each step (past the end: 0)


@dataclass
class WalkResult:
    trace: Trace
    faults: int
    kind: str | None = None  # divergence | leak | violation
    detail: str = ""
    divergence: Divergence | None = None

    @property
    def failed(self) -> bool:
        return self.kind is not None


@dataclass
class FuzzStats:
    traces: int = 0
    steps: int = 0
    faults: int = 0
    divergences: int = 0
    leaks: int = 0
    violations: int = 0
    seconds: float = 0.0
    first_finding_s: float | None = None

    def add(self, other: FuzzStats) -> None:
        for name in ("traces", "steps", "faults", "divergences", "leaks", "violations"):
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


def walks(sizes: dict[str, int], variant: Variant, max_steps: int = MAX_STEPS) -> Any:
    from hypothesis import strategies as st

    n, m = sizes["Req"], sizes["Page"]
    low = 2 if variant.switches.decode_reserve == "plus_one" else 1
    # Over a limit one time in four: a rejected request ends at arrive, so even odds would
    # leave most walks without a transfer.
    over = st.integers(0, 3).map(lambda x: x == 3)
    flags = st.lists(over, min_size=n, max_size=n).map(tuple)
    reserve = st.lists(st.integers(low, max(low, m)), min_size=n, max_size=n).map(tuple)
    # Half the walks run the full length; shrinking goes to the short branch, then down.
    length = st.one_of(st.integers(0, max_steps), st.just(max_steps))
    choice = st.integers(0, 2**16 - 1)
    choices = st.lists(choice, min_size=max_steps, max_size=max_steps).map(tuple)
    return st.builds(Walk, flags, flags, reserve, length, choices)


def run_walk(
    variant: Variant,
    walk: Walk,
    *,
    sizes: dict[str, int] = SIZES,
    faults: bool = False,
    engine: EngineFactory = Cluster,
    model: Any = "echo",
    reference: Any = None,
    forced: tuple[ActionInstance, ...] | None = None,
) -> WalkResult:
    """One lockstep walk; stops at the first finding. ``forced``: take these steps instead
    of choosing (shrinking's trimming pass); a step the engine cannot take ends the run."""
    init = {
        "over_p": {(r,): v for r, v in enumerate(walk.over_p)},
        "over_d": {(r,): v for r, v in enumerate(walk.over_d)},
    }
    ls = Lockstep(
        variant,
        sizes,
        init,
        walk.reserve,
        engine=engine,
        model=model,
        max_new_tokens=MAX_NEW_TOKENS,
    )
    steps: list[ActionInstance] = []
    n_faults = 0

    def result(kind: str | None = None, detail: str = "", div: Divergence | None = None) -> Any:
        meta = {"reserve": list(walk.reserve), "finding": kind, "detail": detail}
        trace = Trace(variant.name, dict(sizes), init, tuple(steps), None, meta)
        if kind == "violation" or kind == "leak":
            bad = ls.model_violated() or ls.engine_violated()
            trace = replace(trace, violated=bad[0] if bad else None)
        return WalkResult(trace, n_faults, kind, detail, div)

    div = ls.check_initial()
    if div is not None:
        return result("divergence", div.reason, div)
    # Past the drawn choices the walk goes on with choice 0 (the first candidate: progress
    # of the lowest request), so shrinking the length and the choices gives short runs.
    for i in range(walk.length if forced is None else len(forced)):
        cands = _candidates(ls, faults)
        if forced is not None:
            if forced[i] not in cands:
                return result()
            inst = forced[i]
        else:
            if not cands:
                break
            choice = walk.choices[i] if i < len(walk.choices) else 0
            inst = _pick(ls, cands, choice)
        if _is_fault(ls, inst):
            n_faults += 1
        status, div = ls.apply(inst)
        steps.append(inst)
        if status != "ok":  # the engine offered it, so "not enabled" is a divergence too
            reason = div.reason if div else "the engine performs it, the model does not"
            return result("divergence", f"step {len(steps)}: {inst}: {reason}", div)
        if faults and inst.action in ("done", "ack"):
            ls.cluster.redeliver(ls.rids.event(inst))  # a duplicate status message
            n_faults += 1
        bad_engine = ls.engine_violated()
        if bad_engine:
            return result("leak", f"engine violates {', '.join(bad_engine)} after {inst}")
        bad_model = ls.model_violated()
        if bad_model:
            return result("violation", f"model violates {', '.join(bad_model)} after {inst}")
    leaks = [f for f in ls.oracle(reference) if f.leak]
    if leaks:
        f = leaks[0]
        return result("leak", f"oracle: request {f.rid - ls.rids.offset} got 200 with {f.text!r}")
    return result()


def trim(variant: Variant, walk: Walk, found: WalkResult, **kw: Any) -> WalkResult:
    """Drop steps one at a time while the run still fails the same way (after Hypothesis's
    shrinking, whose choice encoding keeps steps that only make room for others)."""
    best = found
    for r in range(len(walk.reserve)):  # first a whole request at a time
        steps = tuple(s for s in best.trace.steps if s.args[0] != r)
        res = run_walk(variant, walk, forced=steps, **kw)
        if res.kind == found.kind and len(res.trace.steps) < len(best.trace.steps):
            best = res
    i = 0
    while i < len(best.trace.steps):
        steps = best.trace.steps[:i] + best.trace.steps[i + 1 :]
        res = run_walk(variant, walk, forced=steps, **kw)
        if res.kind == found.kind and len(res.trace.steps) < len(best.trace.steps):
            best = res
        else:
            i += 1
    return best


def _pick(ls: Lockstep, cands: list[ActionInstance], choice: int) -> ActionInstance:
    """One choice in FAULT_ODDS goes to a fault (when one is possible), the rest to progress:
    a fault every step or two would cut most requests short before the interesting part."""
    faults = [c for c in cands if _is_fault(ls, c)]
    progress = [c for c in cands if c not in faults]
    pool = (
        faults if (choice % FAULT_ODDS == FAULT_ODDS - 1 and faults) or not progress else progress
    )
    return pool[(choice // FAULT_ODDS) % len(pool)]


def _is_fault(ls: Lockstep, inst: ActionInstance) -> bool:
    if inst.action in FAULT_ACTIONS:
        return True
    if inst.action == "land":
        oldest = ls.cluster.handoff.transfer.oldest()
        return oldest is not None and (oldest.rid, oldest.page) != (
            inst.args[0] + ls.rids.offset,
            inst.args[1],
        )
    return False


def _candidates(ls: Lockstep, faults: bool) -> list[ActionInstance]:
    h = ls.cluster.handoff
    out = []
    for inst in ls.engine_enabled():
        rid = inst.args[0] + ls.rids.offset
        if inst.action == "step" and len(h.d[rid].tokens) >= ls.max_new_tokens:
            continue
        if not faults and (inst.action in FAULT_ACTIONS or _is_fault(ls, inst)):
            continue
        out.append(inst)
    return sorted(out, key=lambda i: (i.action in FAULT_ACTIONS, i.args, ORDER.get(i.action, 99)))


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
    """Up to ``n`` walks from ``seed``; the first failing one, shrunk (or None). Torch's
    thread count is the caller's: the tiny models want one (the CLI sets it)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    from kvproof.refimpl.models import build_model
    from kvproof.refimpl.single_node import SingleNode

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
                kind = {"divergence": "divergences", "leak": "leaks", "violation": "violations"}
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
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker) as pool:
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


def _worker() -> None:
    """In the pool's own processes only (the caller's torch settings are the caller's):
    one intra-op thread, the tiny models' ops are microseconds."""
    import torch

    torch.set_num_threads(1)


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))
