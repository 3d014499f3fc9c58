"""The CLI is a thin shell (issue #26 item 2): every ``checker/cli/*.py`` and ``ops/cli/*.py``
parses arguments, makes one library call (``checker/runs/``, an ``ops/`` product) and
renders, in at most 150 lines, most under 100. A module that grows past that is carrying
library work: move it to its run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = sorted([*(ROOT / "checker" / "cli").glob("*.py"), *(ROOT / "ops" / "cli").glob("*.py")])
MOST = 100  # most modules stay under this
MAX = 150  # and none goes past this


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_every_cli_module_is_at_most_150_lines() -> None:
    assert CLI, "no checker/cli modules found"
    long = {p.name: n for p in CLI if (n := lines(p)) > MAX}
    assert long == {}


def test_most_cli_modules_are_under_100_lines() -> None:
    under = [p.name for p in CLI if lines(p) < MOST]
    assert len(under) > len(CLI) / 2, sorted((lines(p), p.name) for p in CLI)
