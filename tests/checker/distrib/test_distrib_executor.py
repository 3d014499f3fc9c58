"""Executors without Ray: the ordered merge, the local pool against serial, resumable
campaigns, and that nothing imports Ray unless ``--ray`` is given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.distrib.campaign import CampaignLog
from kvproof.checker.distrib.executor import PoolExecutor, SerialExecutor, Unit, ordered
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant


def _square(x: int) -> int:
    return x * x


def _slow_first(x: int) -> int:
    import time

    time.sleep(0.3 if x == 0 else 0.0)  # unit 0 finishes last on a pool
    return x


def test_ordered_merge_is_the_serial_order_and_stops_at_the_first_stop() -> None:
    units = [Unit(i, _slow_first, (i,)) for i in range(6)]
    stops = lambda r: r in (2, 4)  # noqa: E731
    with PoolExecutor(2) as pool:
        got = list(ordered(pool, units, stops=stops))
    assert got == [(0, 0), (1, 1), (2, 2)] == list(ordered(SerialExecutor(), units, stops=stops))


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def test_serial_units_run_with_one_torch_thread_and_the_callers_setting_comes_back() -> None:
    # As in the pool's workers: one process ran fuzz 5-10x slower with a thread per core.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        units = [Unit(i, _threads) for i in range(2)]
        assert list(SerialExecutor().imap(units)) == [(0, 1), (1, 1)]
        assert torch.get_num_threads() == 2
        with PoolExecutor(2) as pool:
            assert sorted(pool.imap(units)) == [(0, 1), (1, 1)]
    finally:
        torch.set_num_threads(before)


def test_ordered_takes_done_units_without_running_them() -> None:
    ran: list[int] = []
    units = [Unit(i, _square, (i,)) for i in range(4)]
    out = list(
        ordered(SerialExecutor(), units, done={1: 99}, on_arrival=lambda i, r: ran.append(i))
    )
    assert out == [(0, 0), (1, 99), (2, 4), (3, 9)] and ran == [0, 2, 3]


def test_pool_fuzz_equals_serial_fuzz() -> None:
    v = load_variant("sglang-0.5.22-pd")
    a = fuzz(v, traces=40, faults=True, seed=3, workers=1)
    b = fuzz(v, traces=40, faults=True, seed=3, workers=2)
    keys = ("traces", "steps", "faults", "divergences", "leaks", "violations")
    assert [getattr(a.stats, k) for k in keys] == [getattr(b.stats, k) for k in keys]
    assert a.finding is None and b.finding is None and a.batches == b.batches


def test_resume_skips_recorded_batches_and_gives_the_same_result(tmp_path: Path) -> None:
    v = load_variant("sglang-0.5.22-pd")
    a = fuzz(v, traces=40, faults=True, seed=1, resume=tmp_path)
    units = tmp_path / "units.jsonl"
    lines = units.read_text().splitlines()
    assert len(lines) == a.batches > 1
    # Killed while writing its last line: that batch runs again, and no other.
    units.write_text("\n".join(lines[:-1]) + '\n{"index": 3, "wal')
    b = fuzz(v, traces=40, faults=True, seed=1, resume=tmp_path)
    rerun = [json.loads(x)["index"] for x in units.read_text().splitlines()[len(lines) :]]
    assert rerun == [json.loads(lines[-1])["index"]]
    keys = ("traces", "steps", "faults", "leaks")
    assert [getattr(a.stats, k) for k in keys] == [getattr(b.stats, k) for k in keys]


def test_resume_with_other_settings_is_bad_input(tmp_path: Path) -> None:
    CampaignLog(tmp_path, {"variant": "a", "seed": 0})
    with pytest.raises(KvproofInputError, match="seed"):
        CampaignLog(tmp_path, {"variant": "a", "seed": 1})


@pytest.mark.slow
def test_a_finding_is_written_as_it_arrives_and_resume_reports_it(tmp_path: Path) -> None:
    v = load_variant("sglang-0.5.19-pd")
    a = fuzz(v, traces=100, seed=0, resume=tmp_path)
    assert a.finding is not None
    assert [p.name for p in (tmp_path / "findings").iterdir()] == [f"{v.name}.batch-0.jsonl"]
    b = fuzz(v, traces=100, seed=0, resume=tmp_path)  # nothing runs again but the shrink
    assert b.finding is not None and b.finding.kind == a.finding.kind
    assert b.finding.trace.meta["seed"] == a.finding.trace.meta["seed"]
    assert b.stats.traces == a.stats.traces


def test_ray_flag_without_ray_installed_exits_2_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code = main(["check", "sglang-0.5.22-pd", "--ray", "--no-prove", "--depth", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pip install 'kvproof[ray]'" in err[0], err


def test_fuzz_without_ray_flag_never_imports_ray(tmp_path: Path) -> None:
    argv = ["fuzz", "sglang-0.5.22-pd", "--traces", "10", "--json", "--out", str(tmp_path)]
    code = (
        "import sys; from kvproof.checker.cli import main;"
        f" rc = main({argv!r}); assert rc == 0, rc;"
        " assert 'ray' not in sys.modules, 'ray imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
