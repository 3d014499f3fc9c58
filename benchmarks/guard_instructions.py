"""Instructions executed by decode with and without the guards: a load-independent figure.

CPU time on a shared 2-core machine swings by more than the 1% the guards may cost
(``benchmarks/engine.py`` needs many lockstep pairs and an A/A control to see through it).
Instruction counts do not: under ``valgrind --tool=callgrind`` the same seeded workload
executes the same instructions whatever else runs. Each count runs ``engine.py``'s workload
once to warm up, then again with callgrind's collection switched on only inside the events
it selects, through a 3-line C helper compiled on first use (it needs a C compiler and
valgrind's headers):

* ``decode``: commit and step events (what ``engine.py`` times), plain and guarded;
* ``lookup``: ``PageTags.unchanged`` (may this read reuse a passed check?);
* ``check``: the guarded kernel's tag compare (``tag_mismatch``);
* ``adler32``: the decode-side checksum at commit.

Prints one JSON object: the instructions of each, the guarded/plain overhead of decode and
each component as a share of plain decode. Instructions are not time (a cache miss costs
no instruction): read this next to ``engine.py``'s CPU-time pairs, not instead of them.
Children run with ``PYTHONHASHSEED=0``, so two runs of the same code give the same counts.
``--keep DIR`` keeps the callgrind files: ``callgrind_annotate`` on the plain and guarded
decode files shows, function by function, where the difference lies.

    python benchmarks/guard_instructions.py [--jobs 2] [--keep DIR]   # ~5-10 min, 2 cores
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
import engine

import kvproof.kernels.api as kernels_api
from kvproof.spec.variant import load_variant

HELPER = """#include <valgrind/callgrind.h>
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
"""


def _helper() -> ctypes.CDLL:
    """``cg_toggle`` (``CALLGRIND_TOGGLE_COLLECT``) and ``cg_start`` (start instrumenting,
    for ``--instr-atstart=no``) as C calls: no-op instructions outside valgrind."""
    out = Path(tempfile.gettempdir()) / "kvproof_cgtoggle2.so"
    if not out.exists():
        src = out.with_suffix(".c")
        src.write_text(HELPER)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return ctypes.CDLL(str(out))


CALLS = [0]  # calls of the counted function in this (child) process


def counted(fn: Callable[..., Any], toggle: Callable[[], None]) -> Callable[..., Any]:
    def wrapper(*a: Any, **kw: Any) -> Any:
        CALLS[0] += 1
        toggle()
        try:
            return fn(*a, **kw)
        finally:
            toggle()

    return wrapper


def child(args: argparse.Namespace) -> None:
    """Under callgrind: run the workload, collecting only inside ``args.collect``."""
    args.device = "cpu"
    torch.set_num_threads(1)
    plain = load_variant("sglang-0.5.22-pd")
    sw = dataclasses.replace(plain.switches, page_tags=True, transfer_checksum="both")
    variant = dataclasses.replace(plain, name="sglang-0.5.22-pd+guards", switches=sw)
    if not args.guarded:
        variant = plain
    helper = _helper()
    engine.run_once(variant, args)  # warm-up: lazy initialisation is not decode's cost
    helper.cg_start()  # with --instr-atstart=no, the imports and warm-up ran 10x faster
    toggle = helper.cg_toggle
    c, run = engine.prepare(variant, args, False)
    h, dec = c.handoff, c.handoff.decode
    original_check = kernels_api.tag_mismatch
    if args.collect == "noop":  # the wrapper's own instructions, subtracted per call
        noop = counted(lambda: None, toggle)
        for _ in range(1000):
            noop()
        print(json.dumps({"calls": CALLS[0]}))
        return
    try:
        if args.collect == "decode":
            for name in ("commit", "step"):  # decode's reads (refimpl/rules/generate.py)
                rule = h.rules[name]
                h.rules[name] = dataclasses.replace(rule, effect=counted(rule.effect, toggle))
        elif args.collect == "lookup":
            dec.tags.unchanged = counted(dec.tags.unchanged, toggle)  # type: ignore[method-assign]
        elif args.collect == "check":
            kernels_api.tag_mismatch = counted(original_check, toggle)
        else:
            dec.checksum = counted(dec.checksum, toggle)  # type: ignore[method-assign]
        c.run()
    finally:
        kernels_api.tag_mismatch = original_check
    engine._finish(c, run)
    print(json.dumps({"calls": CALLS[0]}))


RUNS = {  # name -> (guarded, collect)
    "plain_decode": (False, "decode"),
    "guarded_decode": (True, "decode"),
    "lookup": (True, "lookup"),
    "check": (True, "check"),
    "adler32": (True, "adler32"),
    "noop": (False, "noop"),
}


def count(name: str, args: argparse.Namespace, folder: Path) -> tuple[int, int]:
    """Instructions collected by one child run under callgrind, and its counted calls."""
    guarded, collect = RUNS[name]
    out = folder / f"{name}.callgrind"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no"]
    cmd += [f"--callgrind-out-file={out}", sys.executable, __file__, "--child"]
    cmd += ["--collect", collect, "--requests", str(args.requests)]
    cmd += ["--new-tokens", str(args.new_tokens), "--seed", str(args.seed)]
    cmd += ["--model", args.model] + (["--guarded"] if guarded else [])
    # A fixed hash seed: str hashes decide dict probing, which moved the guarded/plain
    # difference by ~0.15 points between two runs of the same code.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    calls = json.loads(done.stdout.strip().splitlines()[-1])["calls"]
    for line in out.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]), calls
    raise RuntimeError(f"no summary line in {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--guarded", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--collect", choices=[c for _, c in RUNS.values()], default="decode")
    ap.add_argument("--model", default="tiny", choices=["tiny", "echo"])
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="callgrind runs at a time")
    ap.add_argument("--keep", type=Path, help="keep the callgrind files here (callgrind_annotate)")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        runs = dict(zip(RUNS, pool.map(lambda n: count(n, args, folder), RUNS), strict=True))
    # Each counted call also pays the wrapper (two ctypes calls): priced by the no-op runs
    # and taken off the components (the decode runs pay it alike on both sides).
    wrapper = runs["noop"][0] / runs["noop"][1]
    plain = runs["plain_decode"][0]
    parts = {k: runs[k][0] - wrapper * runs[k][1] for k in ("lookup", "check", "adler32")}
    result = {
        "benchmark": "engine_decode_guard_instructions",
        "model": args.model,
        "requests": args.requests,
        "new_tokens": args.new_tokens,
        "instructions": {k: n for k, (n, _) in runs.items()},
        "calls": {k: c for k, (_, c) in runs.items()},
        "wrapper_per_call": round(wrapper),
        "guard_overhead_pct": round(100 * (runs["guarded_decode"][0] / plain - 1), 3),
        "components_pct_of_plain_decode": {k: round(100 * v / plain, 3) for k, v in parts.items()},
        "per_call": {k: round(v / max(1, runs[k][1])) for k, v in parts.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
