"""``kvproof check --all`` as a CI gate: JUnit and SARIF reports; a harmful change fails it."""

from __future__ import annotations

import json
import shutil
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.variant import VARIANTS_DIR

# Small sizes and depths keep the gate fast; at these sizes the incident variant still shows
# every expected violation (the shortest one has 7 steps).
SMALL = ["--requests", "2", "--pages", "3", "--depth", "8"]

HARMFUL = '''
"""kvproof's handoff with one rule changed: abort frees the pages before the drain ACK."""

from dataclasses import replace
from typing import Any

from kvproof.model.lang.dsl import Action, Protocol
from kvproof.model.handoff import build_handoff


def build(sw: Any) -> Protocol:
    base = build_handoff(sw)

    def abort(s: Any, r: Any) -> None:
        s.require(s.isin(s.dphase(r), "queued", "transfer", "running"))
        s.set("dphase", (r,), "done")
        s.update("owns", lambda x, q, old: s.ite(s.eq(x, r), False, old))  # no drain ACK
        s.set("poll", (r,), "failed")
        s.set("abort_msg", (r,), True)
        s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "aborted", s.resp(r)))

    actions = tuple(
        replace(a, body=abort) if a.name == "abort" else a for a in base.actions
    )
    return replace(base, actions=actions)
'''


def _variants(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "variants"
    folder.mkdir()
    for name in names:
        shutil.copy(VARIANTS_DIR / f"{name}.toml", folder)
    return folder


def _line_of(path: Path, key: str) -> int:
    lines = path.read_text().splitlines()
    start = lines.index("[expect]")
    return next(i for i, line in enumerate(lines) if i > start and line.startswith(key)) + 1


def _gate(folder: Path, tmp_path: Path, *extra: str) -> tuple[int, ET.Element, dict]:  # type: ignore[type-arg]
    junit, sarif = tmp_path / "junit.xml", tmp_path / "report.sarif"
    argv = ["check", "--all", "--variants-dir", str(folder), *SMALL, *extra]
    rc = main([*argv, "--junit", str(junit), "--sarif", str(sarif)])
    return rc, ET.parse(junit).getroot(), json.loads(sarif.read_text())


def _check_sarif_shape(sarif: dict) -> None:  # type: ignore[type-arg]
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "kvproof"
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert result["message"]["text"]
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith(".toml")
        assert loc["region"]["startLine"] >= 1


@pytest.mark.slow
def test_gate_passes_on_the_repo(tmp_path: Path) -> None:
    folder = _variants(tmp_path, "sglang-0.5.19-pd", "sglang-0.5.22-pd")
    rc, junit, sarif = _gate(folder, tmp_path)
    assert rc == 0
    # 4 invariants per variant, plus the fixed variant's proof.
    assert (junit.get("tests"), junit.get("failures")) == ("9", "0")
    suites = {s.get("name"): s for s in junit.iter("testsuite")}
    assert set(suites) == {"sglang-0.5.19-pd", "sglang-0.5.22-pd"}
    assert "proof (all sizes)" in {c.get("name") for c in suites["sglang-0.5.22-pd"]}
    # An expected violation passes and still carries its trace.
    stray = next(c for c in suites["sglang-0.5.19-pd"] if c.get("name") == "no_stray_write")
    assert "land(" in stray.findtext("system-out", "")
    _check_sarif_shape(sarif)
    results = sarif["runs"][0]["results"]
    # Only the incident's expected violations, as notes, each at its [expect] line.
    assert {r["level"] for r in results} == {"note"}
    incident = folder / "sglang-0.5.19-pd.toml"
    assert {r["ruleId"] for r in results} == {"isolation", "no_stray_write", "reject_final"}
    for r in results:
        region = r["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == _line_of(incident, r["ruleId"])


@pytest.mark.slow
def test_harmful_protocol_change_fails_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "harmful_abort.py").write_text(textwrap.dedent(HARMFUL))
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = _variants(tmp_path, "sglang-0.5.22-pd")
    rc, junit, sarif = _gate(folder, tmp_path, "--protocol", "harmful_abort:build")
    assert rc == 1
    failures = {
        case.get("name"): case.find("failure")
        for case in junit.iter("testcase")
        if case.find("failure") is not None
    }
    # The stray write and the broken proof; the failure text is the readable trace.
    assert set(failures) == {"no_stray_write", "proof (all sizes)"}
    text = failures["no_stray_write"].text or ""
    assert "expected holds, got violated" in text
    assert "abort(r0)" in text and "land(r0, p0)" in text
    assert text.index("abort(r0)") < text.index("land(r0, p0)")
    assert "why: a posted write landed in p0" in text
    assert "not inductive after abort" in (failures["proof (all sizes)"].text or "")
    _check_sarif_shape(sarif)
    errors = [r for r in sarif["runs"][0]["results"] if r["level"] == "error"]
    assert {r["ruleId"] for r in errors} == {"no_stray_write", "proof"}
    stray = next(r for r in errors if r["ruleId"] == "no_stray_write")
    trace = stray["message"]["text"].split("Trace: ")[1]
    assert trace.startswith("arrive(r0) -> ") and trace.endswith(" -> land(r0, p0)")
    assert "abort(r0)" in trace
    loc = stray["locations"][0]["physicalLocation"]
    variant = folder / "sglang-0.5.22-pd.toml"
    assert loc["artifactLocation"]["uri"].endswith("sglang-0.5.22-pd.toml")
    assert loc["region"]["startLine"] == _line_of(variant, "no_stray_write")


def test_sarif_uri_is_relative_to_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    folder = repo / "spec" / "variants"
    folder.mkdir(parents=True)
    shutil.copy(VARIANTS_DIR / "sglang-0.5.19-pd.toml", folder)
    rc, _, sarif = _gate(folder, tmp_path, "--invariant", "no_stray_write")
    assert rc == 0
    loc = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {
        "uri": "spec/variants/sglang-0.5.19-pd.toml",
        "uriBaseId": "%SRCROOT%",
    }
