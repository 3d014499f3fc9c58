"""The six fixed variants at 10,000 faulted traces each: a local pool and Ray, 0 findings.

    .venv/bin/python benchmarks/fuzz_fixed.py [--traces N] [--workers W] [--write]

For every fixed variant of the catalog (``kvproof variants``: not ``buggy``), one engine
campaign of ``--traces`` walks with faults on a local pool of ``--workers`` processes and
one on a local Ray with as many CPUs, alternated per variant (pool first on even variants,
Ray first on odd ones) so load drifting over the run hits both alike. The driver runs torch
with one intra-op thread, as ``kvproof fuzz`` does. Prints one JSON object (``--write``:
also to ``benchmarks/fuzz_fixed.json``); goal (issue 30): 0 findings everywhere and at most
5 min in total per executor. Ray's start-up is timed apart from its campaigns; progress
lines go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.executor import PoolExecutor
from kvproof.spec.variant import list_variants

OUT = Path(__file__).with_suffix(".json")


def campaign(variant: Any, traces: int, executor: Any, seed: int) -> dict[str, Any]:
    t = time.perf_counter()
    r = fuzz(variant, traces=traces, faults=True, seed=seed, executor=executor)
    secs = time.perf_counter() - t
    return {
        "traces": r.stats.traces,
        "steps": r.stats.steps,
        "faults_injected": r.stats.faults,
        "findings": 0 if r.finding is None else 1,
        "finding": None if r.finding is None else r.finding.detail,
        "seconds": round(secs, 1),
        "traces_per_second": round(r.stats.traces / secs, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ray", action="store_true", help="the local pool only")
    parser.add_argument("--write", action="store_true", help=f"also write {OUT.name}")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as `kvproof fuzz` (runs/fuzz_run.py) does; see benchmarks/scale.py
    fixed = [v for v in list_variants() if not v.buggy]
    out: dict[str, Any] = {
        "benchmark": "fuzz_fixed",
        "command": "python benchmarks/fuzz_fixed.py "
        + f"--traces {args.traces} --workers {args.workers}"
        + (" --no-ray" if args.no_ray else "")
        + (" --write" if args.write else ""),
        "machine": {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count()},
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "variants": [v.name for v in fixed],
    }
    executors: dict[str, Any] = {"local_pool": PoolExecutor(args.workers)}
    if not args.no_ray:
        from kvproof.checker.distrib.executor import RayExecutor

        t = time.perf_counter()
        executors["ray"] = RayExecutor(num_cpus=args.workers)
        campaign(fixed[0], 10, executors["ray"], seed=98)  # its workers' start (torch imports)
        out["ray_start_up_seconds"] = round(time.perf_counter() - t, 1)
    campaign(fixed[0], 10, executors["local_pool"], seed=98)  # the same warm-up for the pool
    runs: dict[str, dict[str, Any]] = {name: {} for name in executors}
    try:
        for i, v in enumerate(fixed):
            names = list(executors) if i % 2 == 0 else list(reversed(executors))
            for name in names:
                runs[name][v.name] = r = campaign(v, args.traces, executors[name], args.seed)
                print(f"# {name} {v.name}: {r}", file=sys.stderr, flush=True)
    finally:
        for ex in executors.values():
            ex.close()
    for name, per in runs.items():
        out[name] = {
            "campaigns": per,
            "total_traces": sum(r["traces"] for r in per.values()),
            "total_findings": sum(r["findings"] for r in per.values()),
            "total_seconds": round(sum(r["seconds"] for r in per.values()), 1),
        }
    out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(out, indent=2)
    print(text)
    if args.write:
        OUT.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
