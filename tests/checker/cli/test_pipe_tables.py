"""Tables that survive a pipe (issue #28 item 2), beyond ``test_pipe_output.py``'s variants
and ``check --all``: COLUMNS is the width when set, ``PIPE_WIDTH`` (a CI log's 120, not
rich's 80) when not, and the proof's cores and the fuzz summary keep every name and number
whole at any width."""

from __future__ import annotations

import re

import pytest

from kvproof.checker.cli import main
from kvproof.model.handoff import protocol_of
from kvproof.spec.variant import list_variants, load_variant

NAMES = {v.name for v in list_variants()}


def _words(out: str) -> set[str]:
    return {w.strip("│┃,") for w in out.split()}


def test_columns_200_is_the_width_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 200
    assert _words(out) >= NAMES and "…" not in out
    # at 200 columns nothing folds: one row per variant
    assert sum(1 for ln in out.splitlines() if _words(ln) & NAMES) == len(NAMES)


def test_without_columns_a_pipe_gets_the_pipe_width_not_80(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kvproof.checker.cli.consoles import PIPE_WIDTH

    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert _words(out) >= NAMES and "…" not in out  # every name whole, each once
    assert sum(1 for ln in lines if _words(ln) & NAMES) == len(NAMES)
    assert 80 < max(len(line) for line in lines) <= PIPE_WIDTH


def test_proof_cores_keep_action_and_conjunct_names_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["prove", "sglang-0.5.22-pd", "--cores", "--quiet"]) == 0
    out = capsys.readouterr().out
    protocol = protocol_of(load_variant("sglang-0.5.22-pd"))
    actions = {a.name for a in protocol.actions}
    conjuncts = {i.name for i in (*protocol.invariants, *protocol.strengthening)}
    keys = re.findall(r"^(\w+)/(\w+) ", out, flags=re.MULTILINE)
    assert keys and all(a in actions and c in conjuncts for a, c in keys)
    assert "…" not in out


def test_fuzz_summary_keeps_headers_and_numbers_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    argv = ["fuzz", "sglang-0.5.22-pd", "--traces", "6", "--workers", "1", "--engine-only"]
    assert main([*argv, "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    [header] = [ln for ln in out.splitlines() if ln.startswith("traces")]
    assert header.split()[:2] == ["traces", "steps"] and header.split()[-1] == "seconds"
    row = out.splitlines()[out.splitlines().index(header) + 1].split()
    assert row[0] == "6" and all(re.fullmatch(r"\d+(\.\d+)?", cell) for cell in row)
