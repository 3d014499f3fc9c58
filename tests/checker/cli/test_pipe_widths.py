"""Piped output fits its content (issue 41): no command, ``audit`` included, writes a line
longer than 200 characters at the default width, and no line is padding to the console's
width (``kvproof audit > a.txt`` once wrote 4,096-character lines of a panel's border)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 200


def piped(*argv: str, cwd: Path = ROOT) -> tuple[int, list[str]]:
    """``kvproof ARGV > file`` as a user's shell runs it: stdout not a terminal, no COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "kvproof", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done.returncode, done.stdout.splitlines()


def assert_fits(lines: list[str]) -> None:
    assert lines, "no output"
    longest = max(lines, key=len)
    assert len(longest) <= LIMIT, f"{len(longest)} characters: {longest[:120]}..."


def test_audit_fits_its_content() -> None:
    rc, lines = piped("audit", "examples/audit/incident.toml")
    assert rc == 1
    assert_fits(lines)


def test_a_panel_is_as_wide_as_its_text() -> None:
    """A short panel is drawn at its content's width, not stretched to the pipe's."""
    import io

    from rich.console import Console
    from rich.panel import Panel

    from kvproof.checker.cli.consoles import PIPE_WIDTH, _fitted

    out = io.StringIO()
    console = _fitted(Console)(file=out, width=PIPE_WIDTH)
    console.print(Panel("short", title="t"))
    widths = {len(line) for line in out.getvalue().splitlines()}
    assert widths == {len("│ short │")}


def test_variants_fits_its_content() -> None:
    rc, lines = piped("variants")
    assert rc == 0
    assert_fits(lines)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("check", "sglang-0.5.19-pd"),
        ("check", "sglang-pd-quarantine", "--liveness", "--no-necessity"),
        ("prove", "sglang-0.5.22-pd"),
        ("demo", "incident"),
        ("explore", "sglang-0.5.19-pd", "--requests", "1", "--pages", "1"),
        ("replay", "traces/sglang-0.5.19-pd.isolation.jsonl"),
    ],
)
def test_command_fits_its_content(argv: tuple[str, ...]) -> None:
    _, lines = piped(*argv)
    assert_fits(lines)


@pytest.mark.slow
def test_conform_fits_its_content() -> None:
    from kvproof.checker.upstream import fetch
    from kvproof.spec.errors import KvproofInputError

    try:
        fetch.cached("0.5.19")
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang 0.5.19 wheel and no index: {exc}")
    _, lines = piped("conform", "sglang-0.5.19-pd", "--sglang", "0.5.19", "--traces", "5")
    assert_fits(lines)


@pytest.mark.slow
def test_advise_fits_its_content() -> None:
    from kvproof.checker.upstream import fetch
    from kvproof.spec.errors import KvproofInputError

    try:
        fetch.cached("0.5.19")
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang 0.5.19 wheel and no index: {exc}")
    # 0.5.19: the incident's release, whose variant advise finds first.
    rc, lines = piped("advise", "sglang==0.5.19", "--traces", "20")
    assert rc == 1 and any(line.endswith("UNSAFE") for line in lines)
    assert_fits(lines)


@pytest.mark.slow
def test_fuzz_fits_its_content(tmp_path: Path) -> None:
    _, lines = piped("fuzz", "sglang-0.5.19-pd", "--traces", "20", "--out", str(tmp_path))
    assert_fits(lines)
