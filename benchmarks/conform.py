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
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = (("sglang-0.5.19-pd", "0.5.19"), ("sglang-0.5.22-pd", "0.5.22"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--traces", type=int, default=200)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out: dict[str, object] = {
        "benchmark": "conform",
        "command": f"python benchmarks/conform.py --trials {args.trials} --traces {args.traces}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "goal_s": 10,
    }
    for variant, release in CASES:
        cmd = [sys.executable, "-m", "kvproof", "conform", variant, "--sglang", release]
        cmd += ["--traces", str(args.traces), "--json", "--quiet"]
        walls, inner, rc = [], [], None
        steps = coverage = trivial = None
        for _ in range(args.trials):
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            walls.append(time.perf_counter() - t)
            rc = done.returncode
            if done.returncode in (0, 1):
                result = json.loads(done.stdout)
                inner.append(result["seconds"])
                steps = result["steps"]
                coverage = result.get("coverage")
                trivial = result.get("trivial_walks")
        out[f"{variant} --sglang {release}"] = {
            "exit_code": rc,
            "steps": steps,
            "coverage": coverage,
            "trivial_walks": trivial,
            "command_s": {
                "median": round(statistics.median(walls), 3),
                "max": round(max(walls), 3),
            },
            "conform_s": {"median": round(statistics.median(inner), 3)} if inner else None,
        }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
