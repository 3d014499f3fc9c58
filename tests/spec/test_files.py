"""Written files: readable by others (the umask's mode, not mkstemp's 0600), announced,
and still atomic."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.files import write_text_atomic


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_takes_the_umask_mode(tmp_path: Path, umask_022: None) -> None:
    target = tmp_path / "r.txt"
    write_text_atomic(target, "one")
    write_text_atomic(target, "two")  # replaced, not appended, no temporary left
    assert target.read_text() == "two" and mode(target) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]
    os.umask(0o077)
    write_text_atomic(target, "three")
    assert mode(target) == 0o600


def test_check_out_writes_0644_files_and_names_them(
    tmp_path: Path, umask_022: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    argv = ["check", "sglang-0.5.19-pd", "--invariant", "isolation", "--no-prove", "--depth", "8"]
    assert main([*argv, "--no-necessity", "--out", str(out)]) == 1
    files = sorted(out.iterdir())
    assert [p.name for p in files] == [
        "sglang-0.5.19-pd.isolation.itf.json",
        "sglang-0.5.19-pd.isolation.jsonl",
    ]
    assert all(mode(p) == 0o644 for p in files)
    said = capsys.readouterr().out.splitlines()
    assert {f"wrote {p}" for p in files} <= set(said)
    # --json: stdout stays one JSON document that lists the files; the lines go to stderr
    assert main([*argv, "--no-necessity", "--out", str(out), "--json"]) == 1
    cap = capsys.readouterr()
    assert sorted(json.loads(cap.out)["files"]) == [str(p) for p in files]
    assert {f"wrote {p}" for p in files} <= set(cap.err.splitlines())
