"""One version string: pyproject.toml's, read from the installed package's metadata."""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from pathlib import Path

import pytest

import kvproof
from kvproof.checker.cli import main

ROOT = Path(__file__).parents[1]


def test_version_flag_prints_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    assert kvproof.__version__ == importlib.metadata.version("kvproof")
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"kvproof {kvproof.__version__}"


def test_installed_metadata_is_this_checkouts_pyproject() -> None:
    dist = importlib.metadata.distribution("kvproof")
    url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    if url != ROOT.as_uri():
        pytest.skip(f"kvproof is installed from {url or 'a wheel'}, not this checkout")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert dist.version == pyproject["project"]["version"]


def test_no_second_version_string_in_the_sources() -> None:
    init = (ROOT / "src" / "kvproof" / "__init__.py").read_text()
    assert 'version("kvproof")' in init and "0.1.0" not in init and "0.2.0" not in init
