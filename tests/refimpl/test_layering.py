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


# The recorder's writers (refimpl/recorder.py): all the engine may do with it.
RECORDER_WRITERS = {"computed", "reused", "carried", "landed", "allocated", "read"}
# Observers: the view the checker compares with the model, and the leak oracle.
READERS = {"cluster.py", "oracle.py", "recorder.py"}


def test_the_engine_writes_the_ground_truth_and_never_reads_it() -> None:
    for path in REFIMPL.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            if node.attr == "truth":
                assert path.name in READERS, f"{path.name} reads the ground truth"
            if isinstance(node.value, ast.Attribute) and node.value.attr == "record":
                assert node.attr in RECORDER_WRITERS, f"{path.name} reads record.{node.attr}"
