"""``kvproof check`` and ``prove`` name the assumptions of every verdict; ``--without``
drops one and shows the counterexample it hides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.variant import VARIANTS_DIR

SMALL = ["--requests", "1", "--pages", "1", "--depth", "8"]


def test_check_json_names_the_assumptions_and_that_they_are_needed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "sglang-0.5.22-pd", "--json", *SMALL]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "holds" and data["without"] == []
    # (its fairness assumption, transfer_eventually_ends, is for check --liveness)
    (a,) = [x for x in data["assumptions"] if x["kind"] == "guard"]
    assert a["name"] == "bounded_transfer" and a["active"] is True
    assert "release timeout" in a["text"] and "30 s" in a["source"] and a["why"]
    assert a["needed"] is True and a["without_it"] == {"violated": "no_stray_write", "steps": 7}
    assert data["proof"]["proved"]


def test_without_bounded_transfer_a_stalled_write_breaks_isolation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["check", "sglang-0.5.22-pd", "--without", "bounded_transfer", "--json"]
    assert main([*args, "--requests", "2", "--pages", "1", "--depth", "14", "--no-prove"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["without"] == ["bounded_transfer"] and not data["matches_expectation"]
    assert data["assumptions"][0]["active"] is False
    got = {i["name"]: i for i in data["invariants"]}
    assert got["no_stray_write"]["verdict"] == "violated"
    iso = got["isolation"]
    assert iso["verdict"] == "violated" and iso["shortest"] == 14
    actions = [row["action"] for row in iso["trace"]]
    assert "timeout" in actions and actions[-1] == "commit"


def test_text_report_shows_assumptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "sglang-0.5.22-pd", *SMALL, "--no-prove", "--no-necessity"]) == 0
    out = capsys.readouterr().out
    assert "under assumptions" in out and "bounded_transfer" in out and "in force" in out


def test_a_variant_without_assumptions_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "sglang-pd-success-overwrites-abort", *SMALL, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["assumptions"] == []


@pytest.mark.slow
def test_guards_make_isolation_hold_without_the_assumption(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The guarded variant's page tags keep isolation without bounded_transfer, but a late
    # write still lands in a reused page: needed (for no_stray_write).
    assert main(["check", "sglang-0.5.22-pd-guarded", "--json", *SMALL]) == 0
    found = json.loads(capsys.readouterr().out)["assumptions"]
    (a,) = [x for x in found if x["kind"] == "guard"]
    assert a["needed"] is True and a["without_it"]["violated"] == "no_stray_write"


@pytest.mark.slow
def test_an_assumption_nothing_needs_is_reported_unnecessary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM frees on the drain (no release timeout): bounded_transfer constrains nothing.
    text = (VARIANTS_DIR / "vllm-nixl-fixed.toml").read_text()
    text = text.replace("[assume]\n", '[assume]\nbounded_transfer = "vacuous here"\n')
    path = tmp_path / "vllm-nixl-fixed.toml"
    path.write_text(text)
    assert main(["check", str(path), "--json", *SMALL]) == 0
    found = {a["name"]: a for a in json.loads(capsys.readouterr().out)["assumptions"]}
    assert found["bounded_transfer"]["needed"] is False
    assert "unnecessary" in found["bounded_transfer"]["needed_detail"]
    assert found["lease_outlives_read"]["needed"] is True


@pytest.mark.slow
def test_prove_reports_assumptions_and_without(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "vllm-nixl-fixed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (a,) = data["assumptions"]
    assert data["proved"] and a["name"] == "lease_outlives_read" and a["needed"] is True
    assert main(["prove", "vllm-nixl-fixed", "--without", "lease_outlives_read", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert not data["proved"] and data["cti"] and data["assumptions"][0]["active"] is False
