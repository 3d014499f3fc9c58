"""The first seed whose ``--no-faults`` walk of ``vllm-nixl-push-fixed`` meets behaviour 1
(#46283) alone, for the tests that draw and replay its lasso."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.conform.result import ConformRun
from kvproof.checker.conform.vllm.run import conform
from kvproof.spec.variant import load_variant


def first_abort_lasso(vllm_tree: Path, tmp_path: Path) -> ConformRun:
    """Seed 0's walk also has a lease expire on a request decode has not scheduled yet
    (``prefill_hold``): two switches, none alone explains it."""
    for seed in range(6):
        run = conform(
            load_variant("vllm-nixl-push-fixed"), str(vllm_tree), faults=False, seed=seed,
            out=tmp_path / f"seed{seed}",
        )  # fmt: skip
        if run.switch == "abort_notifies_prefill":
            return run
    pytest.fail("no seed in 0-5 met behaviour 1 alone")
