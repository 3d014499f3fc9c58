"""A soak of ``kvproof conform`` with its defaults: every SGLang variant with an
``[upstream]`` table against every release it lists, 10,000 walks each (issue 39: "no
listed release diverges from its variant over 10,000 walks with the defaults"), and with
``--vllm`` the two vLLM 0.34 variants against 0.34.0. Prints JSON (one row per cell:
variant, release, walks, exit code, coverage, trivial walks, events, seconds, and the
diagnosis of a divergence) and writes ``benchmarks/conform_soak.json``.

    nice python benchmarks/conform_soak.py [--traces 10000] [--workers 2] [--vllm]
                                           [--only VARIANT ...] [--no-write]

Cells are the listed column of ``kvproof conform --all`` (``checker/upstream/matrix.py``)
and run as units on the local pool (``checker/distrib/executor.py``), each a whole
``conform`` run in its worker. A run stops at its first divergence, so ``walks`` below
``traces`` means it diverged. Exit 1 when any cell does not conform (its table is wrong).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "conform_soak.json"
VLLM = (("vllm-0.34-nixl-pull", "0.34.0"), ("vllm-0.34-nixl-push", "0.34.0"))


def run_cell(engine: str, variant: str, release: str, traces: int, seed: int) -> dict[str, Any]:
    """One cell, in a worker: a whole ``conform`` run with the defaults, timed here."""
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    start = time.perf_counter()
    row: dict[str, Any] = {"engine": engine, "variant": variant, "release": release}
    try:
        if engine == "sglang":
            from kvproof.checker.upstream.run import conform
        else:
            from kvproof.checker.conform.vllm.run import conform  # type: ignore[assignment]
        run = conform(load_variant(variant), release, traces=traces, seed=seed)
    except KvproofInputError as exc:  # no adapter, no wheel: the cell's answer
        return {**row, "exit_code": 2, "error": str(exc), "seconds": _since(start)}
    doc = run.to_json()
    diagnosis = doc.get("diagnosis") or {}
    return {
        **row,
        "walks": run.walks,
        "exit_code": run.exit_code,
        "coverage": doc.get("coverage"),
        "trivial": run.trivial,
        "steps": run.steps,
        "events": run.events,
        "switch": run.switch,
        "headline": diagnosis.get("headline"),
        "raised": run.raised,
        "seconds": _since(start),
    }


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 2)


def cells(vllm: bool, only: list[str]) -> list[tuple[str, str, str]]:
    from kvproof.checker.upstream.matrix import cells as sglang_cells

    out = [("sglang", c.variant, c.release) for c in sglang_cells() if c.column == "listed"]
    if vllm:
        out += [("vllm", v, r) for v, r in VLLM]
    return [c for c in out if not only or c[1] in only]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--vllm", action="store_true", help="also vLLM 0.34 pull/push on 0.34.0")
    ap.add_argument("--only", nargs="*", default=[], metavar="VARIANT")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    os.environ.setdefault("KVPROOF_SGLANG_WHEELS", "/tmp/wheels")
    os.environ.setdefault("KVPROOF_VLLM_WHEELS", "/tmp/wheels")
    from kvproof.checker.distrib.executor import Unit, make_executor

    todo = cells(args.vllm, args.only)
    units = [Unit(i, run_cell, (*c, args.traces, args.seed)) for i, c in enumerate(todo)]
    start = time.perf_counter()
    rows: dict[int, dict[str, Any]] = {}
    executor = make_executor(args.workers)
    try:
        for i, row in executor.imap(units):
            rows[i] = row
            print(f"{row['variant']} on {row['release']}: exit {row['exit_code']}, "
                  f"{row.get('walks')} walks, {row['seconds']} s", file=sys.stderr)  # fmt: skip
    finally:
        executor.close()
    ordered = [rows[i] for i in range(len(todo))]
    bad = [r for r in ordered if r["exit_code"] != 0]
    out = {
        "benchmark": "conform_soak",
        "command": "nice python benchmarks/conform_soak.py "
        f"--traces {args.traces} --workers {args.workers}" + (" --vllm" if args.vllm else ""),
        "traces": args.traces,
        "seed": args.seed,
        "workers": args.workers,
        "machine": {"cpus": os.cpu_count()},
        "cells": len(ordered),
        "diverged": len(bad),
        "seconds": round(time.perf_counter() - start, 1),
        "results": ordered,
    }
    text = json.dumps(out, indent=2)
    print(text)
    if not args.no_write and not args.only:
        OUT.write_text(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
