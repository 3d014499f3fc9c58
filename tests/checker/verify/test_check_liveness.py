"""``kvproof check --liveness`` (issue #29): exit codes, the lasso with its loop in text and
``--json``, ``--invariant`` and ``--without`` on liveness, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_quarantine_is_not_live_and_its_lasso_has_the_loop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, data = _json(capsys, ["check", "sglang-pd-quarantine", "--liveness"])
    assert code == 1
    live = data["liveness"]
    assert live["complete"] and live["matches_expectation"]
    pages = next(p for p in live["properties"] if p["name"] == "pages_return")
    assert pages["verdict"] == "violated" == pages["expected"]
    # The loop index is part of the result: dropping it would make this a finite trace.
    assert isinstance(pages["loop"], int) and 0 < pages["loop"] <= len(pages["trace"])
    assert "crash" in [row["action"] for row in pages["trace"][: pages["loop"]]]


def test_quarantine_text_marks_the_loop(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "sglang-pd-quarantine", "--liveness", "--invariant", "answered"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED answered" in out and "-- loop:" in out
    assert "pages_return" not in out  # --invariant picked one property


def test_fixed_release_is_live_and_the_fairness_it_needs_is_flagged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, data = _json(capsys, ["check", "sglang-0.5.22-pd", "--liveness"])
    assert code == 0 and data["liveness"]["verdict"] == "holds"
    (tee,) = [a for a in data["liveness"]["assumptions"] if a["name"] == "transfer_eventually_ends"]
    assert tee["active"] and tee["needed"] and tee["hides"] == "answered"


def test_without_a_fairness_assumption_shows_the_lasso_it_hid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["check", "sglang-0.5.22-pd", "--liveness", "--without", "transfer_eventually_ends"]
    code, data = _json(capsys, argv)
    assert code == 1
    answered = next(p for p in data["liveness"]["properties"] if p["name"] == "answered")
    assert answered["verdict"] == "violated" and answered["loop"] is not None


@pytest.mark.slow
def test_quarantine_is_safe_without_bounded_transfer(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _json(capsys, ["check", "sglang-pd-quarantine", "--no-necessity"])
    assert code == 0 and data["verdict"] == "holds"
    assert "bounded_transfer" not in [a["name"] for a in data["assumptions"]]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--invariant", "answerd"], "unknown invariant 'answerd'"),
        (["--invariant", "isolation"], "--liveness checks liveness properties only"),
        (["--without", "prefill_eventually_reports"], "does not assume"),
    ],
)
def test_bad_liveness_input_is_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "sglang-0.5.22-pd", "--liveness", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_mixed_safety_and_liveness_names_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "sglang-0.5.22-pd", "--invariant", "isolation", "--invariant", "answered"]
    assert main(argv) == 2
    assert "two runs" in capsys.readouterr().err


def _user_module(tmp_path: Path, name: str, body: str, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / f"{name}.py").write_text(
        "import dataclasses\n"
        "from kvproof.model.handoff import build_handoff\n"
        "def factory(sw):\n"
        f"    return {body}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:factory"


def test_liveness_on_a_protocol_without_properties_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "dataclasses.replace(build_handoff(sw), liveness=())"
    spec = _user_module(tmp_path, "liveless", body, monkeypatch)
    argv = ["check", "sglang-0.5.22-pd", "--protocol", spec, "--liveness"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "declares no liveness properties" in err and len(err.strip().splitlines()) == 1


def test_fairness_on_events_the_protocol_lacks_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A protocol without fail, give_up or timeout: transfer_eventually_ends has nothing to
    # make fair, and the variant file's key is named.
    body = (
        "dataclasses.replace(build_handoff(sw), actions=tuple(a for a in build_handoff(sw)"
        ".actions if a.name not in ('fail', 'give_up', 'timeout')))"
    )
    spec = _user_module(tmp_path, "faultless", body, monkeypatch)
    argv = ["check", "sglang-0.5.22-pd", "--protocol", spec, "--liveness"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "assume.transfer_eventually_ends" in err and "sglang-0.5.22-pd.toml" in err


def test_variants_json_and_check_help_list_the_properties(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["variants", "--json"]) == 0
    by = {v["name"]: v for v in json.loads(capsys.readouterr().out)}
    assert by["sglang-pd-quarantine"]["liveness"] == {
        "answered": "violated",
        "pages_return": "violated",
        "no_starvation": "violated",
    }
    assert set(by["sglang-0.5.22-pd"]["liveness"].values()) == {"holds"}
    assert main(["check", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--liveness" in help_text and "answered, pages_return, no_starvation" in help_text
