"""mypy holds the types (issue 42 item 6): the whole package, strict on ``spec``,
``model.lang``, ``refimpl`` and ``kernels`` (``[tool.mypy]`` in pyproject.toml). CI runs it
through the test command, so a type error fails ``.ci/run`` like a failing test."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRICT_ROOMS = {
    "kvproof.spec.*",
    "kvproof.model.lang.*",
    "kvproof.model.handoff.rules.*",
    "kvproof.refimpl.*",
    "kvproof.kernels.*",
}


def test_the_strict_rooms_are_configured_strict() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["packages"] == ["kvproof"]
    strict = [
        o
        for o in config["overrides"]
        if o.get("disallow_untyped_defs") and o.get("disallow_any_generics")
    ]
    assert strict and set(strict[0]["module"]) >= STRICT_ROOMS


@pytest.mark.slow  # about 25 s of CPU without a cache, a few seconds with one
def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is a dev extra: pip install -e '.[dev]'")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
