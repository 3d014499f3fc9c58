"""Ray executor on a local Ray (2 CPUs, one fake GPU) started by this module: the same
results as the local pool, a killed worker retried, GPU placement, the ``--ray`` CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.executor import PoolExecutor, SerialExecutor, Unit
from kvproof.checker.verify.check_pool import prove_variants, run_jobs
from kvproof.checker.verify.driver import prepare
from kvproof.checker.verify.plan import CheckOptions
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.slow  # a Ray start costs ~20 s on the shared machine


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'kvproof[ray]'")
    from kvproof.checker.distrib.executor import RayExecutor

    # Functions of this test module travel by value: Ray's workers cannot import it.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False)
    try:
        yield RayExecutor()  # joins the Ray above and leaves it running
    finally:
        ray.shutdown()


def _stats(r: Any) -> tuple[int, ...]:
    s = r.stats
    return (s.traces, s.steps, s.faults, s.divergences, s.leaks, s.violations, r.batches)


def test_fuzz_finding_on_ray_is_the_local_pools(ray_cluster: Any) -> None:
    v = load_variant("sglang-0.5.19-pd")
    with PoolExecutor(2) as pool:
        local = fuzz(v, traces=100, seed=0, executor=pool)
    on_ray = fuzz(v, traces=100, seed=0, executor=ray_cluster)
    assert local.finding is not None and on_ray.finding is not None
    assert on_ray.finding.kind == local.finding.kind
    assert on_ray.finding.trace.meta["seed"] == local.finding.trace.meta["seed"]
    assert _stats(on_ray) == _stats(local)
    # Not the shrunk steps themselves: shrinking has a wall-clock budget (search_batch's
    # shrink_budget_s), so on a loaded machine two shrinks of one finding may stop apart.
    assert 0 < len(on_ray.finding.trace.steps) <= 20


def test_clean_fuzz_on_ray_counts_what_the_pool_counts(ray_cluster: Any) -> None:
    v = load_variant("sglang-0.5.22-pd")
    with PoolExecutor(2) as pool:
        local = fuzz(v, traces=40, faults=True, seed=5, executor=pool)
    on_ray = fuzz(v, traces=40, faults=True, seed=5, executor=ray_cluster)
    assert local.finding is None and on_ray.finding is None
    assert _stats(on_ray) == _stats(local)


def _dies_first_time(marker: str) -> int:
    if not os.path.exists(marker):
        Path(marker).write_text("died once\n")
        os._exit(1)  # the worker process is lost, as when a node goes away
    return os.getpid()


def test_a_lost_worker_is_retried(ray_cluster: Any, tmp_path: Path) -> None:
    marker = str(tmp_path / "attempt")
    out = list(ray_cluster.imap([Unit(0, _dies_first_time, (marker,))]))
    assert [i for i, _ in out] == [0] and Path(marker).exists()


def _placement() -> tuple[list[Any], str]:
    import ray

    return list(ray.get_gpu_ids()), os.environ.get("CUDA_VISIBLE_DEVICES", "")


def test_gpu_units_get_a_gpu_from_ray(ray_cluster: Any) -> None:
    out = dict(ray_cluster.imap([Unit(i, _placement, gpus=1.0) for i in range(2)]))
    assert out[0][0] == [0] and out[0][1] == "0" and out[1][0] == [0]
    with pytest.raises(KvproofInputError, match="GPU"):
        list(ray_cluster.imap([Unit(0, _placement, gpus=2.0)]))


class _OnCpu:
    """The units fuzz --device cuda makes, run on Ray as they are (asking for a GPU) but
    with the engine on the CPU: this machine has a fake GPU only."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.slots, self.gpus_asked = inner, inner.slots, []

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        def cpu(unit: Unit) -> Unit:
            self.gpus_asked.append(unit.gpus)
            return dataclasses.replace(unit, kwargs={**unit.kwargs, "device": "cpu"})

        return self.inner.imap(cpu(u) for u in units)

    def close(self) -> None:
        pass


def test_fuzz_device_cuda_asks_ray_for_one_gpu_per_batch(ray_cluster: Any) -> None:
    v = load_variant("sglang-0.5.22-pd")
    ex = _OnCpu(ray_cluster)
    got = fuzz(v, traces=20, seed=2, device="cuda", executor=ex)
    want = fuzz(v, traces=20, seed=2, executor=SerialExecutor())
    assert ex.gpus_asked and set(ex.gpus_asked) == {1.0}
    assert _stats(got) == _stats(want)


def _bmc_rows(checks: list[Any]) -> list[Any]:
    # Verdicts and counterexample lengths; not the steps: Z3's model (which of the equally
    # short counterexamples) depends on the solver context's history in that process, as
    # between a local pool and a serial run already.
    return [
        (c.variant.name, r.invariant, r.holds, r.depth, len(r.trace.steps) if r.trace else None)
        for c in checks
        for r in c.bmc.results
    ]


def test_check_jobs_on_ray_match_a_serial_run(ray_cluster: Any) -> None:
    options = CheckOptions(requests=2, pages=3, depth=6, prove="never")
    jobs = [prepare(load_variant(n), options) for n in ("sglang-0.5.19-pd", "sglang-0.5.22-pd")]
    on_ray = run_jobs(jobs, workers=2, executor=ray_cluster)
    assert _bmc_rows(on_ray) == _bmc_rows(run_jobs(jobs, workers=1))


def test_check_stages_on_ray_reach_the_caller_while_the_tasks_run(ray_cluster: Any) -> None:
    """Ray tasks put their stages on a ``ray.util.queue.Queue`` that a thread here drains
    (``distrib/executor.py``): the caller hears every BMC depth of each variant."""
    import threading

    options = CheckOptions(requests=2, pages=3, depth=4, prove="never", necessity=False)
    jobs = [prepare(load_variant("sglang-0.5.19-pd"), options)]
    seen: list[tuple[str, str, str, int]] = []

    def progress(variant: str, stage: str, detail: str) -> None:
        seen.append((variant, stage, detail, threading.get_ident()))

    run_jobs(jobs, workers=2, executor=ray_cluster, progress=progress)
    stages = [(v, s, d) for v, s, d, _ in seen]
    assert stages == [("sglang-0.5.19-pd", "start", "")] + [
        ("sglang-0.5.19-pd", "bmc", str(k)) for k in range(5)
    ]
    assert all(t != threading.get_ident() for *_, t in seen)  # came through the queue


def test_proofs_on_ray_match_a_serial_run(ray_cluster: Any) -> None:
    variants = [load_variant("sglang-0.5.22-pd")]
    on_ray = prove_variants(variants, ray_cluster)
    here = prove_variants(variants, SerialExecutor())
    assert [r.proved for r in on_ray] == [r.proved for r in here] == [True]


def test_cli_fuzz_ray_joins_the_running_ray(
    ray_cluster: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["fuzz", "sglang-0.5.22-pd", "--traces", "20", "--ray", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["ray"] == "local" and row["workers"] == 2 and row["traces"] >= 20
    import ray

    assert ray.is_initialized()  # the fixture's Ray: used, not shut down
