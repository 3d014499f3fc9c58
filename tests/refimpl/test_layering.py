"""refimpl must never import kvproof.model: differential testing would prove nothing."""

from __future__ import annotations

import ast
from pathlib import Path

REFIMPL = Path(__file__).resolve().parents[2] / "refimpl"


def test_refimpl_never_imports_the_model() -> None:
    for path in REFIMPL.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.startswith("kvproof.model") for n in names), path.name
