"""The conform benchmarks' one body (``conform.py``, ``conform_vllm.py``): each case's whole
command in a fresh process per trial, timed from outside as a user or CI job sees it, and
one JSON object printed."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from time import perf_counter
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def time_conform(args: list[str], trials: int) -> dict[str, Any]:
    """``kvproof conform ARGS --json --quiet`` ``trials`` times: the exit code, the last
    run's JSON (``result``), the command's wall clock and the run's own ``seconds``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "kvproof", "conform", *args, "--json", "--quiet"]
    walls, inner, rc, result = [], [], None, {}
    for _ in range(trials):
        t = perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        walls.append(perf_counter() - t)
        rc = done.returncode
        if done.returncode in (0, 1):
            result = json.loads(done.stdout)
            inner.append(result["seconds"])
    return {
        "exit_code": rc,
        "result": result,
        "command_s": {"median": round(statistics.median(walls), 3), "max": round(max(walls), 3)},
        "conform_s": {"median": round(statistics.median(inner), 3)} if inner else None,
    }


def bench(name: str, goal_s: int, flag: str, cases: Any, keys: tuple[str, ...]) -> int:
    """``python benchmarks/NAME.py [--trials 3] [--traces 200]``: ``kvproof conform VARIANT
    FLAG RELEASE`` per case; ``keys``: what each case reports of the run's JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--traces", type=int, default=200)
    args = ap.parse_args()
    out: dict[str, object] = {
        "benchmark": name,
        "command": f"python benchmarks/{name}.py --trials {args.trials} --traces {args.traces}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "goal_s": goal_s,
    }
    for variant, release in cases:
        timed = time_conform([variant, flag, release, "--traces", str(args.traces)], args.trials)
        result = timed.pop("result")
        found = {k: result.get(k) for k in keys}
        out[f"{variant} {flag} {release}"] = {"exit_code": timed.pop("exit_code"), **found, **timed}
    print(json.dumps(out, indent=2))
    return 0
