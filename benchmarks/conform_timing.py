"""The timing loop of the conform benchmarks (``conform.py``, ``conform_vllm.py``): the
whole command in a fresh process per trial, timed from outside as a user or CI job sees it."""

from __future__ import annotations

import json
import os
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
