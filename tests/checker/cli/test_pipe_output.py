"""Output that survives a pipe: off a terminal no table cuts a name, number or release, with
or without COLUMNS; `variants` marks the incident and the recommended release, and says
which releases each variant is (its sources are in ``--json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.variant import VARIANTS_DIR, list_variants

NAMES = [v.name for v in list_variants()]
SPANS = ["0.5.15-0.5.19", "0.5.22-0.5.23", "0.5.21-0.5.23*"]


@pytest.mark.parametrize("columns", [None, "80", "40"])
def test_variants_keeps_every_name_and_release_whole(
    columns: str | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    words = {w.strip("│┃,") for w in out.split()}
    assert set(NAMES) <= words and set(SPANS) <= words
    assert "…" not in out


def test_variants_shows_the_releases_each_variant_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants"]) == 0
    lines = capsys.readouterr().out.splitlines()
    [incident] = [ln for ln in lines if "(the incident)" in ln]
    assert "sglang 0.5.15-0.5.19" in incident
    [early] = [ln for ln in lines if "sglang-pd-early-free-abort" in ln]
    assert "0.5.21-0.5.23*" in early
    assert "* with SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=False" in lines
    assert main(["variants", "--json"]) == 0
    rows = {v["name"]: v for v in json.loads(capsys.readouterr().out)}
    assert rows["sglang-0.5.19-pd"]["releases"] == [
        "0.5.15",
        "0.5.16",
        "0.5.17",
        "0.5.18",
        "0.5.19",
    ]
    assert rows["sglang-0.5.20-pd"]["releases"] == ["0.5.20"]
    assert rows["vllm-nixl-fixed"]["releases"] == [] and rows["vllm-nixl-fixed"]["sources"]


def test_variants_marks_the_incident_and_the_recommended_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["variants"]) == 0
    lines = capsys.readouterr().out.splitlines()
    [incident] = [ln for ln in lines if "(the incident)" in ln]
    [recommended] = [ln for ln in lines if "(recommended)" in ln]
    assert "sglang-0.5.19-pd " in incident and "sglang-0.5.22-pd " in recommended
    assert main(["variants", "--json"]) == 0
    roles = {v["name"]: v["role"] for v in json.loads(capsys.readouterr().out) if v["role"]}
    assert roles == {"sglang-0.5.19-pd": "incident", "sglang-0.5.22-pd": "recommended"}


@pytest.mark.parametrize("columns", [None, "60"])
def test_check_all_in_a_pipe_cuts_no_cell(
    columns: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for name in ("sglang-0.5.19-pd", "sglang-pd-checksum-decode-only"):
        shutil.copy(VARIANTS_DIR / f"{name}.toml", tmp_path)
    argv = ["check", "--all", "--variants-dir", str(tmp_path), "--workers", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    rows = [ln for ln in out.splitlines() if "violated@" in ln]
    assert len(rows) == 5  # 3 + 2 expected violations, one row each, nothing folded
    names = {"sglang-0.5.19-pd", "sglang-pd-checksum-decode-only"}
    assert all(names & {w.strip("│") for w in ln.split()} for ln in rows)
