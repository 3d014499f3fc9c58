"""``conform`` against an SGLang release as a library call: the release's code (opened by
``engine.open_sglang``) driven by the engine-neutral core (``checker/conform/run.py``),
one ``ConformRun`` back (results, files written, ``to_json()``, ``exit_code``).

Exit codes: 0 the code agrees on every walk, 1 a divergence (written as a trace whose
header carries the diagnosis), 2 bad input (raised as ``KvproofInputError`` before any
walk starts).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from kvproof.checker.conform.result import ConformRun
from kvproof.checker.conform.run import Options, Progress, conform_engine, latest_release
from kvproof.checker.upstream.engine import (
    ALSO_READ,
    EXERCISED,
    MOONCAKE,
    REAL,
    SIZES,
    check_variant,
    open_sglang,
    page_counts,
)
from kvproof.spec.variant import Variant

__all__ = [
    "ALSO_READ",
    "EXERCISED",
    "MOONCAKE",
    "REAL",
    "SIZES",
    "ConformRun",
    "conform",
    "default_release",
    "page_counts",
]


def default_release(variant: Variant) -> str:
    """The newest release the variant's ``[upstream]`` table says it conforms to."""
    check_variant(variant)
    return latest_release(variant, "--sglang")


def conform(
    variant: Variant,
    sglang: str,
    *,
    traces: int = 200,
    seed: int = 0,
    faults: bool = True,
    out: Path | None = None,
    max_steps: int = 30,
    env: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> ConformRun:
    """``env`` overrides the variant's ``[upstream.env]`` (a notebook asking "and under
    this setting?"); its keys are checked like the table's."""
    opts = Options(traces=traces, seed=seed, faults=faults, out=out, max_steps=max_steps)
    start = time.perf_counter()
    with open_sglang(variant, sglang, env) as engine:
        run = conform_engine(engine, variant, opts, progress)
    # The run's seconds include loading the release's modules, as a user waits for them.
    return dataclasses.replace(run, seconds=time.perf_counter() - start)
