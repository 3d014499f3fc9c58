"""Nothing in the project cites a file users do not have.

kvproof's authors kept notes and press copies outside the repository; a user has only what
git tracks. Every upstream fact lives in ``docs/upstream.md`` with its link, so no tracked
file may point at the authors' notes folder, its press copies or its design notes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

# Built from pieces, so this file does not match itself.
NEEDLES = (
    "shared" + "/",
    "seeds" + "/",
    "(" + "seeds)",
    "UPSTREAM" + ".md",
    "DOMAIN" + ".md",
    "DESIGN" + ".md",
    "STYLE" + ".md",
)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout: {exc}")
    return [ROOT / name for name in out.decode().split("\0") if name]


def _hits(paths: list[Path], root: Path) -> list[str]:
    hits = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # images, submodules, files deleted in the work tree
        for number, line in enumerate(text.splitlines(), start=1):
            hits += [f"{path.relative_to(root)}:{number}: {n}" for n in NEEDLES if n in line]
    return hits


def test_no_tracked_file_cites_the_authors_notes() -> None:
    hits = _hits(_tracked(), ROOT)
    assert not hits, "\n".join(hits)


def test_the_scan_finds_a_citation(tmp_path: Path) -> None:
    """The scan is not vacuous: each needle in a file is reported with its line."""
    cited = tmp_path / "variant.toml"
    cited.write_text("# fine\n" + "".join(f"# from {n}x\n" for n in NEEDLES))
    assert _hits([cited], tmp_path) == [
        f"variant.toml:{i}: {n}" for i, n in enumerate(NEEDLES, start=2)
    ]
    assert (ROOT / "docs" / "upstream.md").is_file()  # where the facts live instead
