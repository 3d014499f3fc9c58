"""``conform`` against a vLLM release as a library call: the release's code (opened by
``engine.open_vllm``) driven by the engine-neutral core (``checker/conform/run.py``), one
``ConformRun`` back, as the SGLang form returns.

    run = conform(load_variant("vllm-nixl-fixed"), "0.34.0")
    run.exit_code, run.switch, run.files
"""

from __future__ import annotations

from pathlib import Path

from kvproof.checker.conform.result import ConformRun
from kvproof.checker.conform.run import Options, Progress, conform_engine, latest_release
from kvproof.checker.conform.vllm.engine import check_variant, open_vllm
from kvproof.spec.variant import Variant


def default_release(variant: Variant) -> str:
    """The newest release the variant's ``[upstream]`` table says it conforms to."""
    check_variant(variant)
    return latest_release(variant, "--vllm")


def conform(
    variant: Variant,
    vllm: str,
    *,
    traces: int = 200,
    seed: int = 0,
    faults: bool = True,
    out: Path | None = None,
    max_steps: int = 30,
    progress: Progress | None = None,
) -> ConformRun:
    opts = Options(traces=traces, seed=seed, faults=faults, out=out, max_steps=max_steps)
    with open_vllm(variant, vllm) as engine:
        return conform_engine(engine, variant, opts, progress)
