"""Progress in logs (issue #28 item 1): off a terminal, one line on stderr as each variant
finishes and a heartbeat inside a long stage, forwarded from the worker processes while they
run; stdout keeps the results (``--json`` stays one document); ``--quiet`` says nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.report.progress_display import LogLines
from kvproof.checker.verify.check_pool import run_jobs
from kvproof.checker.verify.driver import prepare
from kvproof.checker.verify.plan import CheckOptions
from kvproof.spec.variant import VARIANTS_DIR, load_variant

# Buggy variants whose BMC ends in a few seconds (no proof, no necessity check).
FAST = ("sglang-0.5.19-pd", "vllm-decode-extra-block", "sglang-pd-checksum-decode-only")
ROOT = Path(__file__).resolve().parents[3]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_log_lines_say_each_finish_and_beat_inside_a_long_stage() -> None:
    out, clock = io.StringIO(), Clock()
    lines = LogLines(out, 2, heartbeat_s=30.0, clock=clock)
    lines("a", "bmc", "3")
    clock.now += 29.0
    lines.beat()
    assert out.getvalue() == ""  # no heartbeat before one is due
    clock.now += 2.0
    lines("a", "bmc", "11")
    lines.beat()
    assert out.getvalue() == "... a: BMC depth 11 (31 s)\n"
    lines.beat()  # just said: nothing new
    lines("b", "necessity", "bounded_transfer")
    clock.now += 30.0
    lines.beat()
    assert out.getvalue().splitlines()[1:] == [
        "... a: BMC depth 11 (61 s)",
        "... b: necessity of bounded_transfer (30 s)",
    ]
    lines.done("a", "holds as expected")
    lines("a", "bmc", "12")  # a late event from the worker: ignored, no heartbeat after
    clock.now += 30.0
    lines.beat()
    lines.done("b", "violated as expected (isolation)")
    assert out.getvalue().splitlines()[3:] == [
        "[1/2] a: holds as expected (61.0 s)",
        "... b: necessity of bounded_transfer (60 s)",
        "[2/2] b: violated as expected (isolation) (60.0 s)",
    ]


def test_stages_are_forwarded_from_the_worker_processes_while_they_run() -> None:
    options = CheckOptions(requests=3, pages=6, depth=6, prove="never", necessity=False)
    jobs = [prepare(load_variant(name), options) for name in FAST[:2]]
    lock = threading.Lock()
    seen: list[tuple[str, ...]] = []

    def progress(variant: str, stage: str, detail: str) -> None:
        with lock:
            seen.append((variant, stage, detail, str(threading.get_ident())))

    def done(check: Any) -> None:
        with lock:
            seen.append((check.variant.name, "done"))

    checks = run_jobs(jobs, workers=2, on_done=done, progress=progress)
    assert [c.variant.name for c in checks] == list(FAST[:2])
    for name in FAST[:2]:
        mine = [e for e in seen if e[0] == name]
        stages = [e[1:3] for e in mine if e[1] != "done"]
        assert stages == [("start", ""), *(("bmc", str(k)) for k in range(7))]
        # the first stage came while the worker was still at work, not with its result
        assert mine[0][1] == "start" and mine[-1][1] == "done"
        assert mine[0][3] != str(threading.get_ident())  # delivered by the drain thread


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``check --all > out 2> err`` on three fast variants and two workers, stderr read line
    by line as it comes; whether the process was still running at each line."""
    folder = tmp_path_factory.mktemp("variants")
    for name in FAST:
        shutil.copy(VARIANTS_DIR / f"{name}.toml", folder)
    out = folder / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KVPROOF_HEARTBEAT_S": "0.2"}
    env.pop("COLUMNS", None)
    argv = [sys.executable, "-m", "kvproof", "check", "--all", "--variants-dir", str(folder)]
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [*argv, "--workers", "2"],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append((line.rstrip("\n"), proc.poll() is None))
        code = proc.wait()
    return {"code": code, "err": lines, "out": out.read_text()}


def test_check_all_to_a_pipe_says_each_variant_while_it_runs(piped: dict[str, Any]) -> None:
    assert piped["code"] == 0, piped["err"]
    done = [(line, alive) for line, alive in piped["err"] if line.startswith("[")]
    # one line per variant: its safety verdict, then its [expect] liveness keys (a phase of
    # the same job)
    assert [line.split("]")[0] for line, _ in done] == ["[1/3", "[2/3", "[3/3"]
    assert all("; liveness as expected" in line for line, _ in done)
    assert {line.split()[1].rstrip(":") for line, _ in done} == set(FAST)
    assert all("violated as expected" in line for line, _ in done)
    # the first line came before the run ended, not with everything at exit: the process
    # was alive, and the other variants' heartbeats still came after it
    assert done[0][1]
    after = [line for line, _ in piped["err"]][piped["err"].index(done[0]) + 1 :]
    assert any(line.startswith("... ") for line in after)
    assert "kvproof check --all" in piped["out"] and "…" not in piped["out"]
    assert not any(line.startswith(("[", "...")) for line in piped["out"].splitlines())


def test_a_long_stage_gets_heartbeats(piped: dict[str, Any]) -> None:
    beats = [line for line, _ in piped["err"] if line.startswith("... ")]
    assert any("BMC depth" in line for line in beats), piped["err"]
    assert {line.split()[1].rstrip(":") for line in beats} <= set(FAST)


def test_json_stdout_stays_one_document_while_progress_goes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # one variant runs in this process (no pool): the heartbeat thread beats beside Z3
    monkeypatch.setenv("KVPROOF_HEARTBEAT_S", "0.2")
    assert main(["check", FAST[0], "--json"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)["variant"] == FAST[0]
    [line] = [ln for ln in cap.err.splitlines() if ln.startswith("[")]
    assert line.startswith(f"[1/1] {FAST[0]}: violated as expected")
    assert any(ln.startswith(f"... {FAST[0]}: BMC depth") for ln in cap.err.splitlines())


def test_quiet_says_nothing_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KVPROOF_HEARTBEAT_S", "0.05")
    assert main(["check", FAST[0], "--json", "--depth", "6", "--quiet"]) == 1
    cap = capsys.readouterr()
    assert cap.err == "" and json.loads(cap.out)["variant"] == FAST[0]


def test_prove_says_each_variant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "sglang-0.5.22-pd", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["proved"] is True
    assert [ln.split(" (")[0] for ln in cap.err.splitlines() if ln.startswith("[")] == [
        "[1/1] sglang-0.5.22-pd: proved"
    ]


@pytest.mark.parametrize("bad", ["0", "-1", "soon"])
def test_a_bad_heartbeat_is_exit_2_with_one_line(
    bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KVPROOF_HEARTBEAT_S", bad)
    assert main(["check", FAST[0], "--depth", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "KVPROOF_HEARTBEAT_S" in err and "\n" not in err


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_display_with_each_variants_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kvproof.checker.report.progress_display import progress_for

    screen = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.delenv("COLUMNS", raising=False)
    with progress_for("checking variants", 2, console=None) as progress:
        progress("a", "bmc", "7")
        progress("b", "necessity", "bounded_transfer")
        progress.done("a", "holds as expected")
        progress._bar.refresh()  # type: ignore[attr-defined]
    drawn = screen.getvalue()
    assert "b: necessity of bounded_transfer" in drawn and "1/2" in drawn
    assert "[1/2]" not in drawn  # the log lines are for logs, not for a terminal
