"""``kvproof fuzz --traces 1000000000``: seconds to its first walk and its memory until
interrupted (issue 41: it sat at ``0/1000000000`` for 25 s and grew to 3.8 GB first, as
every batch was planned up front).

A child process runs ``kvproof fuzz VARIANT --traces 1000000000 --workers 1`` through the
CLI's own ``main`` with one wrapper: the engine's first walk (``run_walk``) writes the
seconds since the child's interpreter started. The parent samples the child's resident
memory every 0.1 s, interrupts it (SIGINT, as Ctrl-C) after ``--seconds``, and reads its
peak (``VmHWM``). A fixed variant is the default, so no finding ends the run early.
Prints one JSON object.

    python benchmarks/fuzz_start.py [--variant sglang-0.5.22-pd] [--seconds 20]
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402

TRACES = 1_000_000_000


def child(variant: str) -> int:
    from kvproof.checker.cli import main
    from kvproof.checker.conformance import fuzz

    real = fuzz.run_walk
    seen = [False]

    def first(*args: object, **kwargs: object) -> object:
        if not seen[0]:
            seen[0] = True
            wall, cpu = time.perf_counter() - T0, time.process_time()
            print(f"FIRST_WALK {wall:.3f} {cpu:.3f}", file=sys.stderr, flush=True)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    fuzz.run_walk = first  # type: ignore[assignment]
    argv = ["fuzz", variant, "--traces", str(TRACES), "--workers", "1", "--engine-only"]
    with tempfile.TemporaryDirectory() as out:  # a finding's trace, if any, goes nowhere kept
        return main([*argv, "--quiet", "--out", out])


def _kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def parent(variant: str, seconds: float) -> dict[str, object]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", "--variant", variant],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    rss: list[tuple[float, int]] = []
    peak_kb = 0
    while time.perf_counter() - start < seconds and proc.poll() is None:
        try:
            rss.append((round(time.perf_counter() - start, 1), _kb(proc.pid, "VmRSS")))
            peak_kb = _kb(proc.pid, "VmHWM")
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=60)
    reader.join(timeout=5)
    walks = [x.split()[1:] for x in lines if x.startswith("FIRST_WALK")]
    first_walk, first_walk_cpu = (float(walks[0][0]), float(walks[0][1])) if walks else (None, None)
    every_5s = [kb for t, kb in rss if abs(t % 5) < 0.1]
    return {
        "command": f"kvproof fuzz {variant} --traces {TRACES} --workers 1 --engine-only",
        "ran_s": seconds,
        "first_walk_s": first_walk,
        # the child's CPU time by then: on a loaded machine wall time is mostly waiting
        "first_walk_cpu_s": first_walk_cpu,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "rss_mb_every_5s": [round(kb / 1024, 1) for kb in every_5s],
        "exit_code_after_sigint": rc,
        "load_average": os.getloadavg(),
        "goal": "first walk within 5 s, under 500 MB until interrupted",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="sglang-0.5.22-pd")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.variant)
    print(json.dumps(parent(args.variant, args.seconds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
