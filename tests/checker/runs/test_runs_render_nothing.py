"""A run computes; its renderer prints (issue 42: ``runs/`` and ``report/`` no longer split
one command's output). No module of ``checker/runs/`` prints or writes to a console: every
command's text, ``--json`` object and files live in ``checker/render/``."""

from __future__ import annotations

import ast
from pathlib import Path

RUNS = Path(__file__).resolve().parents[3] / "checker" / "runs"


def prints(path: Path) -> list[int]:
    """Lines of ``print(...)`` or ``<anything>.print(...)`` calls in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "print")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "print")
        )
    ]


def test_no_run_prints() -> None:
    found = {p.name: lines for p in sorted(RUNS.glob("*.py")) if (lines := prints(p))}
    assert found == {}


def test_the_rule_sees_a_print(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f(console):\n    console.print('x')\n    print('y')\n")
    assert prints(probe) == [2, 3]
