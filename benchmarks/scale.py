"""Scaling figures for fuzz campaigns: 1 process, a local pool of 2, Ray on 2 CPUs.

    .venv/bin/python benchmarks/scale.py [--traces N] [--variant NAME]   (needs kvproof[ray])

Prints one JSON object: traces per second for each executor (one campaign each, on a clean
variant with faults, so every walk runs to its end), Ray's fixed overhead per campaign
(start-up: ``ray.init`` and the first tasks' worker start; per campaign once started: the
driver's round trips), and a model of a cluster of W workers:

    seconds(T traces) = overhead + T / (W * efficiency * rate_1)

with ``rate_1`` the one-process rate and ``efficiency`` Ray's rate per CPU over ``rate_1``
measured here. A campaign is worth distributing over W workers once it beats one local
process, i.e. past T = overhead * rate_1 / (1 - 1 / (W * efficiency)) traces. All figures
are from one run; on a shared machine compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.executor import PoolExecutor, SerialExecutor
from kvproof.spec.variant import load_variant


def campaign(variant: Any, traces: int, executor: Any, seed: int) -> dict[str, Any]:
    t = time.perf_counter()
    r = fuzz(variant, traces=traces, faults=True, seed=seed, executor=executor)
    secs = time.perf_counter() - t
    assert r.finding is None, r.finding and r.finding.detail  # a clean variant: no shrinking
    return {
        "traces": r.stats.traces,
        "seconds": round(secs, 2),
        "traces_per_second": round(r.stats.traces / secs, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=400)
    parser.add_argument("--variant", default="sglang-0.5.22-pd")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import ray

    from kvproof.checker.distrib.ray_executor import RayExecutor

    v = load_variant(args.variant)
    out: dict[str, Any] = {
        "variant": v.name,
        "faults": True,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "ray": ray.__version__,
    }
    fuzz(v, traces=10, faults=True, seed=99, executor=SerialExecutor())  # imports, warm-up
    out["one_process"] = one = campaign(v, args.traces, SerialExecutor(), args.seed)
    with PoolExecutor(2) as pool:
        out["local_pool_2"] = pool2 = campaign(v, args.traces, pool, args.seed)

    t = time.perf_counter()
    with RayExecutor(num_cpus=2) as ex:
        init_s = time.perf_counter() - t
        # The first (tiny) campaign pays the workers' start (a process each, importing torch).
        cold = campaign(v, 10, ex, seed=98)
        warm_tiny = campaign(v, 10, ex, seed=98)
        out["ray_2_cpus"] = ray2 = campaign(v, args.traces, ex, args.seed)
    with PoolExecutor(2) as pool:
        pool_tiny = campaign(v, 10, pool, seed=98)
    start_up = init_s + cold["seconds"] - warm_tiny["seconds"]
    per_campaign = warm_tiny["seconds"] - pool_tiny["seconds"]
    out["ray_overhead_seconds"] = {
        "start_up": round(start_up, 2),
        "ray_init": round(init_s, 2),
        "per_campaign_vs_local_pool": round(per_campaign, 2),
    }
    rate_1 = one["traces_per_second"]
    eff = ray2["traces_per_second"] / (2 * rate_1)
    overhead = start_up + max(0.0, per_campaign)
    out["ray_over_local_pool"] = round(ray2["traces_per_second"] / pool2["traces_per_second"], 3)
    out["ray_efficiency_per_cpu"] = round(eff, 3)
    model = {}
    for w in (2, 8, 32, 128):
        gain = 1 - 1 / (w * eff)
        model[str(w)] = {
            "traces_per_second": round(w * eff * rate_1, 1),
            "worth_it_past_traces": None if gain <= 0 else round(overhead * rate_1 / gain),
            "seconds_for_100k_traces": round(overhead + 100_000 / (w * eff * rate_1), 1),
        }
    out["model_workers"] = model
    out["note"] = "one run on a shared 2-core machine: ratios hold, seconds are loaded"
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
