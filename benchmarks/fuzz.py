"""Fuzzing figures: traces per second, and seconds to the first finding per buggy variant.

    .venv/bin/python benchmarks/fuzz.py [--traces N] [--budget N] [--workers W]

Prints one JSON object. Every walk runs with faults; one process unless ``--workers``.
Goal (issue 6): every buggy variant found in under 5 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from fuzz_fixed import campaign  # this folder, on the path when run as a script

from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.executor import make_executor
from kvproof.spec.variant import list_variants


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=300, help="walks for the throughput")
    parser.add_argument("--budget", type=int, default=3000, help="max walks per buggy variant")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    variants = list_variants()
    out: dict[str, object] = {"cpus": os.cpu_count(), "workers": args.workers, "faults": True}
    throughput = {}
    with make_executor(args.workers) as executor:
        for v in variants:
            if not v.buggy:
                throughput[v.name] = campaign(v, args.traces, executor, args.seed)
    out["fixed"] = throughput
    found = {}
    for v in variants:
        if not v.buggy:
            continue
        t = time.perf_counter()
        r = fuzz(v, traces=args.budget, faults=True, seed=args.seed, workers=args.workers)
        f = r.finding
        found[v.name] = {
            "found": f is not None,
            "kind": None if f is None else f.kind,
            "seconds_to_first_finding": None
            if r.stats.first_finding_s is None
            else round(r.stats.first_finding_s, 2),
            "seconds_with_shrinking": round(time.perf_counter() - t, 2),
            "traces_to_first_finding": r.stats.traces,
            "shrunk_steps": None if f is None else len(f.trace.steps),
        }
    out["buggy"] = found
    times = [x["seconds_to_first_finding"] for x in found.values()]
    out["all_buggy_found"] = all(x["found"] for x in found.values())
    out["max_seconds_to_first_finding"] = max((t for t in times if t is not None), default=None)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
