"""Fast start, from the shell: time to the incident's counterexample, kvproof vs SPIN, and
``kvproof fuzz``'s time to its first finding (model side, then the engine's confirmation).

* ``check``: ``kvproof check sglang-0.5.19-pd --invariant isolation --no-prove``, whole
  process (interpreter start, imports, BMC, the replayed trace printed, exit).
* ``spin``: SPIN's pipeline on the coarser Promela model ``benchmarks/promela/incident.pml``
  (``spin -a``, ``gcc -O2 -DSAFETY``, ``./pan``), whole pipeline; skipped when ``spin`` or
  ``gcc`` is missing (``apt-get install -y spin``).
* ``fuzz``: ``kvproof fuzz sglang-0.5.19-pd``, seconds from the process start to the line
  reporting the model-side finding, and to the engine's confirmation.

Runs alternate the tools over ``--trials`` rounds (a shared, noisy machine hits both alike);
the figures are medians with min and max; the ratio is the median of per-round ratios. Wall
time on a loaded machine is mostly waiting for a core, so the CPU time (user + system) of
each whole process tree is reported too (``*_cpu_s``), with its own ratio.
Prints one JSON object; ``--write`` also stores it in ``benchmarks/cli_start.json``.

    python benchmarks/cli_start.py [--trials 5] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KVPROOF = [sys.executable, "-m", "kvproof"]
CHECK = [*KVPROOF, "check", "sglang-0.5.19-pd", "--invariant", "isolation", "--no-prove"]


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_check() -> tuple[float, float]:
    cpu0, start = children_cpu(), time.perf_counter()
    done = subprocess.run(CHECK, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - start, children_cpu() - cpu0
    assert done.returncode == 1 and "VIOLATED invariant 1 isolation" in done.stdout, done.stderr
    return seconds, cpu


def run_spin() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(HERE / "promela" / "incident.pml", tmp)
        cpu0, start = children_cpu(), time.perf_counter()
        for cmd in (
            ["spin", "-a", "incident.pml"],
            ["gcc", "-O2", "-DSAFETY", "-o", "pan", "pan.c"],
            ["./pan"],
        ):
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, check=False)
        seconds, cpu = time.perf_counter() - start, children_cpu() - cpu0
        assert "assertion violated" in done.stdout, done.stdout
    return seconds, cpu


def run_fuzz() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*KVPROOF, "fuzz", "sglang-0.5.19-pd", "--out", tmp]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1)
        marks: dict[str, float] = {}
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter() - start
            if "model-side finding" in line and "model_finding_s" not in marks:
                marks["model_finding_s"] = now
            if "ENGINE CONFIRMS" in line or "ENGINE DISAGREES" in line:
                marks["engine_confirmation_s"] = now
        proc.wait()
        marks["exit_s"] = time.perf_counter() - start
        assert proc.returncode == 1
    return marks


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(xs), 3),
        "min": round(min(xs), 3),
        "max": round(max(xs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    have_spin = bool(shutil.which("spin") and shutil.which("gcc"))
    check, spin, ratios = [], [], []
    check_cpu, spin_cpu, cpu_ratios = [], [], []
    fuzz: dict[str, list[float]] = {}
    for _ in range(args.trials):
        c, c_cpu = run_check()
        check.append(c)
        check_cpu.append(c_cpu)
        if have_spin:
            s, s_cpu = run_spin()
            spin.append(s)
            spin_cpu.append(s_cpu)
            ratios.append(c / s)
            cpu_ratios.append(c_cpu / s_cpu)
        for k, v in run_fuzz().items():
            fuzz.setdefault(k, []).append(v)
    out = {
        "benchmark": "cli_start",
        "command": "python benchmarks/cli_start.py " + " ".join(sys.argv[1:]),
        "trials": args.trials,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "check_incident_s": summary(check),
        "check_command": " ".join(["kvproof", *CHECK[3:]]),
        "spin_pipeline_s": summary(spin) if spin else None,
        "spin_model": "benchmarks/promela/incident.pml" if spin else "spin not installed",
        "ratio_check_over_spin": summary(ratios) if ratios else None,
        "ratio_goal": 0.5,
        "check_incident_cpu_s": summary(check_cpu),
        "spin_pipeline_cpu_s": summary(spin_cpu) if spin_cpu else None,
        "ratio_cpu_check_over_spin": summary(cpu_ratios) if cpu_ratios else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "fuzz_command": "kvproof fuzz sglang-0.5.19-pd",
        "fuzz_s": {k: summary(v) for k, v in fuzz.items()},
        "fuzz_first_finding_goal_s": 2.0,
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.write:
        (HERE / "cli_start.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
