"""``check`` never ends on "unknown" without saying what would settle it (issue #14 item 3),
and ``check --all`` runs the complete search for a variant whose TOML asks for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvproof.checker.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples/deep_bug"
SPEC = f"{EXAMPLE / 'pipeline.py'}:Pipeline"
SMALL = ["--requests", "2", "--pages", "2"]


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["check", *args, "--protocol", SPEC, *SMALL, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_bmc_silent_and_proof_failed_runs_the_complete_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The bug needs 9 steps, bmc_depth is 6, the proof fails: without the fallback this
    # would end on "holds to depth 6" next to a failed proof.
    code, data = _check(capsys, "release-early", "--prove")
    assert data["verdict"] == "violated"  # the proof failed
    assert data["invariants"][0]["verdict"] == "holds"  # BMC found nothing to depth 6
    done = data["complete"]
    assert done["reason"] == "fallback" and done["verdict"] == "violated"
    assert done["depth"] == 9 and done["trace"] and "settle" not in done
    assert code == 1


def test_an_exhausted_budget_names_the_command_that_would_decide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The fix at 3 Req / 4 Page: BFS does not finish in a millisecond, nor does the rest.
    size = ["--requests", "3", "--pages", "4", "--budget", "0.001"]
    code = main(["check", "release-waits", "--protocol", SPEC, "--prove", "--json", *size])
    data = json.loads(capsys.readouterr().out)
    done = data["complete"]
    assert done["verdict"] == "unknown" and done["reason"] == "fallback"
    assert done["settle"].startswith("kvproof check release-waits --protocol ")
    assert done["settle"].endswith("--complete --requests 3 --pages 4 --budget 0.004")
    assert code == 1  # the proof failed


def test_no_complete_search_when_bmc_or_the_proof_decides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, data = _check(capsys, "release-early")  # no proof asked: BMC's bounded verdict only
    assert "complete" not in data


def test_check_all_honours_a_variants_complete_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "variants"
    shutil.copytree(EXAMPLE / "variants", folder)
    path = folder / "release-waits.toml"
    path.write_text(path.read_text().replace("bmc_depth = 6", "bmc_depth = 6\ncomplete = true"))
    code = main(
        ["check", "--all", "--variants-dir", str(folder), "--protocol", SPEC, *SMALL, "--json"]
    )
    by_name = {v["variant"]: v for v in json.loads(capsys.readouterr().out)}
    assert code == 1  # release-early's 9-step bug is past its bmc_depth: BMC misses it
    assert by_name["release-waits"]["matches_expectation"]
    done = by_name["release-waits"]["complete"]
    assert done["reason"] == "variant" and done["verdict"] == "holds"
    assert "complete" not in by_name["release-early"]  # did not ask
