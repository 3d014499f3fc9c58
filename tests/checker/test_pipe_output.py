"""Output that survives a pipe: off a terminal no table cuts a name, number or URL, with or
without COLUMNS; `variants` marks the incident and the recommended release."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.variant import VARIANTS_DIR, list_variants

NAMES = [v.name for v in list_variants()]
URLS = [v.sources[0].split()[0] for v in list_variants()]


@pytest.mark.parametrize("columns", [None, "80", "40"])
def test_variants_keeps_every_name_and_url_whole(
    columns: str | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    words = {w.strip("│┃,") for w in out.split()}
    assert set(NAMES) <= words and set(URLS) <= words
    assert "…" not in out


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
