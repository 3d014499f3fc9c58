"""SPIN's pipeline on the Promela models of ``benchmarks/promela/`` (compile and run, timed).

``spin -a MODEL && gcc -O2 -DSAFETY [-DBFS] -o pan pan.c && ./pan``: the whole pipeline is
what a user waits for, so it is what is timed, as kvproof's whole process is. Used by
``benchmarks/model_check.py --spin``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

PROMELA = Path(__file__).resolve().parent / "promela"


def spin_available() -> bool:
    return shutil.which("spin") is not None and shutil.which("gcc") is not None


def run_spin(model: str, *, bfs: bool, cap_s: float) -> dict[str, object]:
    """One timed pipeline on ``promela/MODEL``; ``cap_s`` bounds the search (``./pan``)."""
    with tempfile.TemporaryDirectory() as tmp:
        for f in PROMELA.glob("*.pml"):
            shutil.copy(f, tmp)
        start = time.perf_counter()
        subprocess.run(["spin", "-a", model], cwd=tmp, check=True, capture_output=True)
        flags = ["-O2", "-DSAFETY", *(["-DBFS"] if bfs else []), "-o", "pan", "pan.c"]
        subprocess.run(["gcc", *flags], cwd=tmp, check=True, capture_output=True)
        compiled = time.perf_counter() - start
        try:
            proc = subprocess.run(
                ["./pan"], cwd=tmp, capture_output=True, text=True, timeout=cap_s, check=False
            )
            out, finished = proc.stdout, True
        except subprocess.TimeoutExpired as e:
            raw = e.stdout or b""
            out = raw.decode() if isinstance(raw, bytes) else raw
            finished = False
        seconds = time.perf_counter() - start
    stored = re.findall(r"([\d.e+]+) states, stored", out) or re.findall(
        r"States=\s*([\d.e+]+)", out
    )
    error = re.search(r"assertion violated (.*?) \(at depth (\d+)\)", out)
    return {
        "model": f"benchmarks/promela/{model}",
        "search": "BFS" if bfs else "DFS",
        "seconds": round(seconds, 3),
        "compile_s": round(compiled, 3),
        "finished": finished,
        "states": int(float(stored[-1])) if stored else None,
        "violation": error.group(1) if error else None,
        "depth": int(error.group(2)) if error else None,
        "cap_s": cap_s,
    }
