"""``check --all``'s pool: each unit in a fresh fork, results and typed errors handed back."""

from __future__ import annotations

import os

import pytest

from kvproof.checker.distrib.executor import Unit
from kvproof.checker.verify.check_pool import CheckJob, _cost, _isolated
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _job(name: str, depth: int = 3) -> CheckJob:
    return CheckJob(load_variant(name), 2, 2, depth, None, "auto")


def test_a_unit_runs_in_another_process_and_returns_plain_data() -> None:
    assert _isolated(lambda job: (os.getpid(), job.depth), _job("sglang-0.5.19-pd", 5)) != (
        os.getpid(),
        5,
    )
    assert _isolated(lambda job: job.depth, _job("sglang-0.5.19-pd", 5)) == 5


def test_a_units_input_error_reaches_the_parent_typed() -> None:
    def bad(job: CheckJob) -> None:
        raise KvproofInputError("unknown invariant 'x'", "--invariant")

    with pytest.raises(KvproofInputError, match="unknown invariant"):
        _isolated(bad, _job("sglang-0.5.19-pd"))


def test_fixed_variants_start_first() -> None:
    jobs = [_job("sglang-0.5.19-pd", 12), _job("sglang-0.5.22-pd", 15)]
    units = sorted((Unit(i, len, (j,)) for i, j in enumerate(jobs)), key=_cost)
    assert [u.index for u in units] == [1, 0]
