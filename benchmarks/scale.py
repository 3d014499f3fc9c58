"""Scaling figures for fuzz campaigns: 1 process, a local pool of 2, Ray on 2 CPUs.

    .venv/bin/python benchmarks/scale.py [--traces N] [--rounds R] [--variant NAME]

Prints one JSON object. Every executor does the same work: the same warm-up campaign (10
walks: the pool forks its workers, Ray starts its own), then in each round the same
campaign (same variant, seed and budget, so the same batches and walks), the executors'
order rotating from round to round so load drifting over the run hits each alike. Torch
runs with one intra-op thread everywhere, as ``kvproof fuzz`` (``checker/runs/fuzz_run.py``)
and the executors' workers (``distrib/executor.one_thread``) do.

Figures per executor, median and range over the rounds: traces per second (wall), per
worker (wall rate / workers), and per CPU-second: each batch's own CPU time
(``time.process_time`` around the unit, in whichever process runs it), which a neighbour's
load does not inflate the way it inflates wall time on a shared machine. The per-core
goal (issue 30) compares the pool's traces per CPU-second with one process's.

Why the earlier figures disagreed (issue 30, item 4): this script ran its one-process
campaign with torch's default intra-op threads (one per core) while the pool's workers ran
one, and a tiny model's many small ops then wait at a barrier for a thread the OS has lent
to a neighbour: 7-9 traces/s against 36-74 with one thread in the same process. The
``SerialExecutor`` now runs units with one thread as the workers do; the
``one_process_default_threads`` figure still measures the old path (units run as called,
torch at its default) each round, on a quarter of the budget, so the cause stays visible.

Ray's fixed overhead (start-up: ``ray.init`` and the first tasks' worker start) feeds a
model of a cluster of W workers: ``seconds(T) = overhead + T / (W * efficiency * rate_1)``,
``efficiency`` being Ray's wall rate per CPU over one process's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.executor import PoolExecutor, SerialExecutor, Unit
from kvproof.spec.variant import load_variant


def _timed(unit: Unit) -> tuple[Any, float]:
    t = time.process_time()
    out = unit()
    return out, time.process_time() - t


class Timed:
    """An executor that also sums its units' CPU seconds, measured where they run."""

    def __init__(self, inner: Any, workers: int) -> None:
        self.inner, self.workers, self.slots, self.cpu = inner, workers, inner.slots, 0.0

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        wrapped = (Unit(u.index, _timed, (u,), {}, u.gpus) for u in units)
        stream = self.inner.imap(wrapped)
        try:
            for index, (result, cpu) in stream:
                self.cpu += cpu
                yield index, result
        finally:
            stream.close()

    def close(self) -> None:
        self.inner.close()


class AsCalled:
    """Units in this process with torch as the caller has it: ``SerialExecutor`` before
    issue 30."""

    slots = 1

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        for unit in units:
            yield unit.index, unit()

    def close(self) -> None:
        pass


def campaign(variant: Any, traces: int, ex: Timed, seed: int) -> dict[str, Any]:
    cpu0 = ex.cpu
    t = time.perf_counter()
    r = fuzz(variant, traces=traces, faults=True, seed=seed, executor=ex)
    secs = time.perf_counter() - t
    assert r.finding is None, r.finding and r.finding.detail  # a clean variant: no shrinking
    cpu = ex.cpu - cpu0
    return {
        "traces": r.stats.traces,
        "steps": r.stats.steps,
        "seconds": secs,
        "traces_per_second": r.stats.traces / secs,
        "per_worker": r.stats.traces / secs / ex.workers,
        "per_cpu_second": r.stats.traces / cpu,
    }


def spread(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    xs = [r[key] for r in rows]
    return {
        "median": round(statistics.median(xs), 2),
        "min": round(min(xs), 2),
        "max": round(max(xs), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", default="sglang-0.5.22-pd")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    v = load_variant(args.variant)
    out: dict[str, Any] = {
        "command": "python benchmarks/scale.py "
        + f"--traces {args.traces} --rounds {args.rounds}"
        + (" --no-ray" if args.no_ray else ""),
        "variant": v.name,
        "faults": True,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch_default_threads": default_threads,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    exs: dict[str, Timed] = {
        "one_process": Timed(SerialExecutor(), 1),
        "local_pool_2": Timed(PoolExecutor(2), 2),
    }
    init_s = cold_s = 0.0
    if not args.no_ray:
        import ray

        from kvproof.checker.distrib.executor import RayExecutor

        out["ray"] = ray.__version__
        t = time.perf_counter()
        exs["ray_2_cpus"] = Timed(RayExecutor(num_cpus=2), 2)
        init_s = time.perf_counter() - t
    warm: dict[str, dict[str, Any]] = {}
    for name, ex in exs.items():  # the same warm-up for each; the first pays imports/starts
        cold_s = campaign(v, 10, ex, seed=98)["seconds"] if name == "ray_2_cpus" else cold_s
        warm[name] = campaign(v, 10, ex, seed=98)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in exs}
    rows["one_process_default_threads"] = []
    names = list(exs)
    as_called = Timed(AsCalled(), 1)
    try:
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                rows[name].append(campaign(v, args.traces, exs[name], args.seed))
            torch.set_num_threads(default_threads)
            try:
                slow = campaign(v, max(10, args.traces // 4), as_called, args.seed)
            finally:
                torch.set_num_threads(1)
            rows["one_process_default_threads"].append(slow)
    finally:
        for ex in exs.values():
            ex.close()
    for name, rs in rows.items():
        out[name] = {
            "traces": rs[0]["traces"],
            "steps": rs[0]["steps"],
            **{k: spread(rs, k) for k in ("traces_per_second", "per_worker", "per_cpu_second")},
        }
    one = rows["one_process"]
    for name in ("local_pool_2", "ray_2_cpus"):
        if name not in rows:
            continue
        # Ratios within a round (the same minute's load), then their median.
        pairs = list(zip(rows[name], one, strict=True))
        cpu = [p["per_cpu_second"] / s["per_cpu_second"] for p, s in pairs]
        wall = [p["per_worker"] / s["per_worker"] for p, s in pairs]
        out[f"{name}_over_one_process_per_core"] = {
            "per_cpu_second": spread([{"x": x} for x in cpu], "x"),
            "per_worker_wall": spread([{"x": x} for x in wall], "x"),
        }
    ratio = out["local_pool_2_over_one_process_per_core"]["per_cpu_second"]["median"]
    out["per_core_within_10_percent"] = abs(ratio - 1) <= 0.10
    if "ray_2_cpus" in rows:
        rate_1 = statistics.median(r["traces_per_second"] for r in one)
        rate_ray = statistics.median(r["traces_per_second"] for r in rows["ray_2_cpus"])
        start_up = init_s + cold_s - warm["ray_2_cpus"]["seconds"]
        per_campaign = warm["ray_2_cpus"]["seconds"] - warm["local_pool_2"]["seconds"]
        out["ray_overhead_seconds"] = {
            "start_up": round(start_up, 2),
            "ray_init": round(init_s, 2),
            "per_campaign_vs_local_pool": round(per_campaign, 2),
        }
        eff = rate_ray / (2 * rate_1)
        overhead = start_up + max(0.0, per_campaign)
        out["ray_efficiency_per_cpu_wall"] = round(eff, 3)
        model = {}
        for w in (2, 8, 32, 128):
            gain = 1 - 1 / (w * eff)
            model[str(w)] = {
                "traces_per_second": round(w * eff * rate_1, 1),
                "worth_it_past_traces": None if gain <= 0 else round(overhead * rate_1 / gain),
                "seconds_for_100k_traces": round(overhead + 100_000 / (w * eff * rate_1), 1),
            }
        out["model_workers"] = model
    out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
