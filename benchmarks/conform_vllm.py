"""How long ``kvproof conform --vllm`` takes for 200 walks with the 0.34.0 wheel cached,
import included: issue 40's goal is at most 60 s. Prints one JSON object (a figure, not a
test).

    KVPROOF_VLLM_WHEELS=/path/to/wheels python benchmarks/conform_vllm.py [--trials 3]

Each trial is the whole command in a fresh process (Python and torch imports, loading the
release's modules, compiling the model, the walks), timed from outside, as a user or a CI
job sees it. ``conform_s`` is the run's own clock (from the model's compilation on).
"""

from __future__ import annotations

import argparse
import json
import os
import platform

from conform_timing import time_conform  # this folder, on the path when run as a script

CASES = (("vllm-0.34-nixl-pull", "0.34.0"), ("vllm-0.34-nixl-push", "0.34.0"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--traces", type=int, default=200)
    args = ap.parse_args()
    out: dict[str, object] = {
        "benchmark": "conform_vllm",
        "command": f"python benchmarks/conform_vllm.py --trials {args.trials} "
        f"--traces {args.traces}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "goal_s": 60,
    }
    for variant, release in CASES:
        timed = time_conform(
            [variant, "--vllm", release, "--traces", str(args.traces)], args.trials
        )
        result = timed.pop("result")
        out[f"{variant} --vllm {release}"] = {
            "exit_code": timed.pop("exit_code"),
            "walks": result.get("walks"),
            "steps": result.get("steps"),
            "coverage": result.get("coverage"),
            **timed,
        }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
