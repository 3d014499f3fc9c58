"""The engine writes the ground truth and never reads it (issue 16: an honest guard)."""

from __future__ import annotations

import ast
from pathlib import Path

REFIMPL = Path(__file__).resolve().parents[2] / "refimpl"


# The recorder's writers (refimpl/recorder.py): all the engine may do with it.
RECORDER_WRITERS = {
    "computed",
    "reused",
    "carried",
    "landed",
    "positioned",
    "allocated",
    "read",
    # decode's radix cache (issue 12 item 4)
    "inserted",
    "landed_shared",
    "read_shared",
}
# Observers: the view the checker compares with the model, and the leak oracle.
READERS = {"cluster.py", "oracle.py", "recorder.py"}


def test_the_engine_writes_the_ground_truth_and_never_reads_it() -> None:
    for path in REFIMPL.rglob("*.py"):  # the rules (refimpl/rules/) too
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            if node.attr == "truth":
                assert path.name in READERS, f"{path.name} reads the ground truth"
            if isinstance(node.value, ast.Attribute) and node.value.attr == "record":
                assert node.attr in RECORDER_WRITERS, f"{path.name} reads record.{node.attr}"
