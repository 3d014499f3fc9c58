"""Rooms outside the engine read and drive it through ``Cluster``'s faces, never its nodes.

The read-only face (``status``, ``pages_of``, ``counts``, ``is_free``, ``owner``, ``view``)
and the environment's (``set_limits``, ``set_prefix_hit``, ``plant_kv``) are all the checker
and the server may use: no ``cluster.handoff``, ``cluster.prefill`` or ``cluster.decode``
(node internals: allocators, pools, limits), read or written. A face's record is fine
(``cluster.status(rid).decode`` is a phase): the rule looks at attributes of a name or an
attribute chain, not of a call's result. The ground-truth recorder (``cluster.truth``, per
side) is the judge's to read: the engine writes it and never reads it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INTERNALS = {"handoff", "prefill", "decode"}


def _engine_users() -> list[Path]:
    """Modules outside refimpl/ that import the engine (so may hold a ``Cluster``)."""
    return [
        p
        for room in ("checker", "ops")
        for p in sorted((ROOT / room).rglob("*.py"))
        if "kvproof.refimpl" in p.read_text(encoding="utf-8")
    ]


def reaches_in(path: Path) -> list[int]:
    """Lines where ``path`` reaches a node (``cluster.handoff.d``, ``c.decode.alloc``,
    ``cluster.prefill.limits = ...``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr in INTERNALS
        and isinstance(n.value, ast.Name | ast.Attribute)
        and not (isinstance(n.value, ast.Attribute) and n.value.attr == "truth")
    )


@pytest.mark.parametrize("path", _engine_users(), ids=lambda p: str(p.relative_to(ROOT)))
def test_rooms_use_the_cluster_faces(path: Path) -> None:
    assert reaches_in(path) == [], f"{path.relative_to(ROOT)} reaches into the engine's nodes"


def test_the_rule_sees_the_rooms_that_drive_the_engine() -> None:
    found = {str(p.relative_to(ROOT)) for p in _engine_users()}
    assert {"checker/conformance/lockstep.py", "ops/serve/runner.py"} <= found


def test_the_check_sees_a_reach_in(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(c, self):\n"
        "    c.decode.limits = 3\n"
        "    self.cluster.prefill.alloc.free_count\n"
        "    return c.handoff.d[0].phase, c.status(0).decode, c.truth.decode\n"
    )
    assert reaches_in(bad) == [2, 3, 4]
