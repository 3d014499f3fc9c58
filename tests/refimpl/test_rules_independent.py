"""The engine's rules stand alone: one per event, none reaching back into the driver.

``refimpl/rules/`` holds one rule per event of ``spec/events.py``; a rule sees a
``Context`` and a ``Flight``, never ``refimpl/handoff.py`` (not even for typing), so the
engine reads event by event like the model's ``model/handoff/rules/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_architecture import imported  # the one resolver of relative imports

from kvproof.refimpl.rules import RULES
from kvproof.spec.events import EVENT_NAMES

REFIMPL = Path(__file__).resolve().parents[2] / "refimpl"
RULES_DIR = REFIMPL / "rules"
DRIVER = "kvproof.refimpl.handoff"


def imports_of(path: Path, package: str = "kvproof.refimpl.rules") -> list[str]:
    """Every module ``path`` imports, at any depth (inside ``if TYPE_CHECKING:`` and
    functions too), relative imports resolved against ``package``."""
    return imported(path, package)


def reaches_driver(names: list[str]) -> list[str]:
    return [n for n in names if n == DRIVER or n.startswith(DRIVER + ".")]


@pytest.mark.parametrize("path", sorted(RULES_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_rule_imports_the_handoff_driver(path: Path) -> None:
    assert reaches_driver(imports_of(path)) == [], f"rules/{path.name} imports {DRIVER}"


def test_the_check_sees_every_form_of_import(tmp_path: Path) -> None:
    # The check itself can fail: each way of naming the driver is caught.
    forms = (
        "from kvproof.refimpl.handoff import Handoff",
        "import kvproof.refimpl.handoff",
        "from kvproof.refimpl import handoff",
        "from .. import handoff",
        "from ..handoff import Handoff",
        "if TYPE_CHECKING:\n    from kvproof.refimpl.handoff import Handoff",
    )
    for i, form in enumerate(forms):
        bad = tmp_path / f"bad{i}.py"
        bad.write_text(form + "\n")
        assert reaches_driver(imports_of(bad)), form


@pytest.mark.parametrize("name", ["radix.py", "decode.py"])
def test_radix_and_decode_do_not_reach_back_into_the_driver(name: str) -> None:
    names = imports_of(REFIMPL / name, "kvproof.refimpl")
    assert reaches_driver(names) == [] and not any("rules" in n for n in names)


def test_one_rule_per_event_in_the_spec_order() -> None:
    assert tuple(RULES) == EVENT_NAMES
    assert all(rule.name == name for name, rule in RULES.items())
