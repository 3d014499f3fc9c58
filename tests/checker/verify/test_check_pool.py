"""``check --all``'s pool: each job in a fresh fork, its protocols inherited, plain data and
typed errors handed back; no module state carries the factory to the workers."""

from __future__ import annotations

import dataclasses
import os

import pytest

from kvproof.checker.distrib.executor import Unit, ordered
from kvproof.checker.distrib.fork import ForkExecutor
from kvproof.checker.verify import check_pool
from kvproof.checker.verify.driver import prepare
from kvproof.checker.verify.plan import CheckOptions
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def test_a_unit_runs_in_another_process_and_may_carry_a_closure() -> None:
    here = os.getpid()
    units = [Unit(i, lambda i=i: (os.getpid(), i)) for i in range(3)]  # not picklable
    got = dict(ordered(ForkExecutor(2), units))
    assert [v[1] for v in got.values()] == [0, 1, 2]
    assert all(pid != here for pid, _ in got.values())


def test_a_units_input_error_reaches_the_parent_typed() -> None:
    def bad() -> None:
        raise KvproofInputError("unknown invariant 'x'", "--invariant")

    with pytest.raises(KvproofInputError, match="unknown invariant"):
        list(ForkExecutor(1).imap([Unit(0, bad)]))


def test_fixed_variants_start_first() -> None:
    options = CheckOptions(requests=2, pages=2)
    jobs = [prepare(load_variant(n), options) for n in ("sglang-0.5.19-pd", "sglang-0.5.22-pd")]
    units = sorted((Unit(i, len, (j,)) for i, (j, _) in enumerate(jobs)), key=check_pool._cost)
    assert [u.index for u in units] == [1, 0]


def test_forked_jobs_match_a_serial_run_and_leave_no_module_state() -> None:
    options = CheckOptions(requests=2, pages=3, prove="never", necessity=False)
    names = ["vllm-nixl-fixed", "sglang-0.5.19-pd", "vllm-nixl-push-fixed"]
    jobs = [
        prepare(load_variant(n), dataclasses.replace(options, depth=d))
        for n, d in zip(names, (3, 7, 4), strict=True)
    ]
    # the pool is fed longest (deepest) first: not the order of ``jobs``
    units = sorted((Unit(i, len, (j,)) for i, (j, _) in enumerate(jobs)), key=check_pool._cost)
    assert [u.index for u in units] == [1, 2, 0]
    forked = check_pool.run_jobs(jobs, workers=2)
    arrived: list[VariantVerdict] = []
    serial = check_pool.run_jobs(jobs, workers=1, on_done=arrived.append)
    # both in the order of ``jobs``; the serial run also runs them in that order
    for got in (forked, serial, arrived):
        assert [v.variant.name for v in got] == names
    rows = [[(r.invariant, r.holds, r.shortest) for r in v.bmc.results] for v in forked]
    assert rows == [[(r.invariant, r.holds, r.shortest) for r in v.bmc.results] for v in serial]
    assert all(v.protocol is p.safety for v, (_, p) in zip(forked, jobs, strict=True))
    # states crossed the pipe with their counterexamples (sglang-0.5.19-pd's, at depth 7)
    traced = [r for v in forked for r in v.bmc.results if r.trace is not None]
    assert traced and all(r.states for r in traced)
    assert not [n for n in vars(check_pool) if n.isupper() or n.startswith("_F")]
