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
@pytest.mark.parametrize("check", [check_output_dir, check_output_file])
def test_uncreatable_path_is_bad_input(check) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KvproofInputError, match="cannot create it"):
        check(PROC / "kvproof-x" / "out", "--out")


@pytest.mark.skipif(not PROC.is_dir(), reason="needs a /proc file system (Linux)")
def test_check_out_under_proc_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "sglang-0.5.19-pd", "--invariant", "isolation", "--no-prove"]
    assert main([*argv, "--out", "/proc/kvproof-x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvproof: error:") and "\n" not in err and "--out" in err


def test_missing_folders_are_made_before_the_work(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "a" / "b", "--out")
    check_output_file(tmp_path / "c" / "d.xml", "--junit")
    assert (tmp_path / "a" / "b").is_dir() and (tmp_path / "c").is_dir()
    assert list((tmp_path / "c").iterdir()) == []  # the probe file is gone
