"""The model's handoff rules stand alone, one per event, as the engine's do (issue 42
item 4): ``model/handoff/rules/`` holds module-level rules ``rule(sw, s, r, ...)``, and
``model/handoff/protocol.py`` only binds a variant's switches into them.
"""

from __future__ import annotations

import ast
import inspect
from functools import partial
from pathlib import Path

import pytest
from test_architecture import imported  # the one resolver of relative imports

from kvproof.model.handoff import build_handoff
from kvproof.model.handoff.protocol import RULES
from kvproof.spec.events import EVENT_NAMES
from kvproof.spec.variant import load_variant

HANDOFF = Path(__file__).resolve().parents[3] / "model" / "handoff"
RULE_FILES = sorted((HANDOFF / "rules").glob("*.py"))
BINDER = "kvproof.model.handoff.protocol"


def nested_defs(path: Path) -> list[str]:
    """Functions defined inside another function in ``path`` (a closure over switches)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out += [
                f"{node.name}.{inner.name}"
                for inner in ast.walk(node)
                if inner is not node and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return out


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_no_rule_imports_the_binder(path: Path) -> None:
    names = imported(path, "kvproof.model.handoff.rules")
    assert not [n for n in names if n == BINDER or n.startswith(BINDER + ".")], path.name


@pytest.mark.parametrize("path", [*RULE_FILES, HANDOFF / "protocol.py"], ids=lambda p: p.name)
def test_rules_are_module_level(path: Path) -> None:
    assert nested_defs(path) == [], f"{path.name} defines functions inside functions"


def test_the_nested_def_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def build(sw):\n    def send(s, r):\n        pass\n    return send\n")
    assert nested_defs(bad) == ["build.send"]


def test_one_rule_per_event_in_the_spec_order() -> None:
    assert tuple(name for name, *_ in RULES) == EVENT_NAMES
    for name, _params, rule, _prefill_step, _doc in RULES:
        assert rule.__name__ == name
        assert rule.__module__.startswith("kvproof.model.handoff.rules.")
        assert list(inspect.signature(rule).parameters)[:2] == ["sw", "s"]


@pytest.mark.parametrize(
    ("variant", "liveness"),
    [("sglang-0.5.22-pd", False), ("sglang-0.5.22-pd", True), ("vllm-0.34-nixl-push", True)],
)
def test_build_handoff_binds_the_switches_into_the_rules(variant: str, liveness: bool) -> None:
    sw = load_variant(variant).switches
    by_name = {name: (rule, step) for name, _p, rule, step, _d in RULES}
    protocol = build_handoff(sw, peer_death=liveness)
    assert [a.name for a in protocol.actions] == [
        n for n in EVENT_NAMES if n in {a.name for a in protocol.actions}
    ]
    assert ("crash" in {a.name for a in protocol.actions}) == liveness
    for a in protocol.actions:
        rule, prefill_step = by_name[a.name]
        assert isinstance(a.body, partial) and a.body.func is rule and a.body.args == (sw,)
        assert a.body.keywords == ({"death": liveness} if prefill_step else {})
