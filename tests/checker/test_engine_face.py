"""The checker reads the engine through ``Cluster``'s face, never its handoff's innards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parents[2] / "checker"


def reaches_in(path: Path) -> list[int]:
    """Lines where ``path`` reads an attribute ``handoff`` (``cluster.handoff.d``, ...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "handoff"
    ]


@pytest.mark.parametrize(
    "path", sorted(CHECKER.rglob("*.py")), ids=lambda p: str(p.relative_to(CHECKER))
)
def test_checker_uses_the_cluster_face(path: Path) -> None:
    assert reaches_in(path) == [], f"{path.relative_to(CHECKER)} reaches into cluster.handoff"


def test_the_check_sees_a_reach_in(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f(c):\n    return c.handoff.d[0].phase\n")
    assert reaches_in(bad) == [2]
