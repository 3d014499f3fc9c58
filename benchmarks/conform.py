"""How long ``kvproof conform`` takes with the wheel cached, with its defaults (faults on,
walks guided to cover the model), and the coverage it reaches: issue 39's goal is at most
10 s for ``--traces 200`` and at least 90% of the reachable abstract transitions. Prints
one JSON object (a figure, not a test).

    python benchmarks/conform.py [--trials 3] [--traces 200]

Each trial is the whole command in a fresh process (imports, loading the release's modules,
the walks), timed from outside, as a user or a CI job sees it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform

from conform_timing import time_conform  # this folder, on the path when run as a script

CASES = (("sglang-0.5.19-pd", "0.5.19"), ("sglang-0.5.22-pd", "0.5.22"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--traces", type=int, default=200)
    args = ap.parse_args()
    out: dict[str, object] = {
        "benchmark": "conform",
        "command": f"python benchmarks/conform.py --trials {args.trials} --traces {args.traces}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "goal_s": 10,
    }
    for variant, release in CASES:
        timed = time_conform(
            [variant, "--sglang", release, "--traces", str(args.traces)], args.trials
        )
        result = timed.pop("result")
        out[f"{variant} --sglang {release}"] = {
            "exit_code": timed.pop("exit_code"),
            "steps": result.get("steps"),
            "coverage": result.get("coverage"),
            "trivial_walks": result.get("trivial_walks"),
            **timed,
        }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
