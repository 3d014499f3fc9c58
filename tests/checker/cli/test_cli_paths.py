"""Output paths that permission bits call writable but that cannot be created (root on
/proc) are bad input before the work, not an internal error after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.cli.paths import check_output_dir, check_output_file
from kvproof.spec.errors import KvproofInputError

PROC = Path("/proc")


@pytest.mark.skipif(not PROC.is_dir(), reason="needs a /proc file system (Linux)")
def test_uncreatable_path_is_bad_input() -> None:
    with pytest.raises(KvproofInputError, match="cannot create it"):
        check_output_dir(PROC / "kvproof-x" / "out", "--out")
    with pytest.raises(KvproofInputError, match="cannot create it"):
        check_output_file(PROC / "kvproof-x", "--junit")


@pytest.mark.skipif(not PROC.is_dir(), reason="needs a /proc file system (Linux)")
def test_check_out_under_proc_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "sglang-0.5.19-pd", "--invariant", "isolation", "--no-prove"]
    assert main([*argv, "--out", "/proc/kvproof-x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvproof: error:") and "\n" not in err and "--out" in err


def test_missing_out_folders_are_made_before_the_work(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "a" / "b", "--out")
    check_output_file(tmp_path / "d.xml", "--junit")
    assert (tmp_path / "a" / "b").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # the probe file is gone


def test_file_output_in_a_missing_folder_is_bad_input_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # README: output paths are checked before the work; a file's folder is never made.
    trace = Path(__file__).parents[3] / "traces" / "sglang-0.5.19-pd.isolation.jsonl"
    html = tmp_path / "missing" / "dir" / "x.html"
    assert main(["report", str(trace), "--no-replay", "--html", str(html)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--html" in err and "does not exist" in err
    assert list(tmp_path.iterdir()) == []
    for flag in ("--junit", "--sarif"):
        argv = ["check", "sglang-0.5.19-pd", "--invariant", "isolation", "--no-prove"]
        assert main([*argv, flag, str(tmp_path / "no" / "r.xml")]) == 2
        assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
