"""``kvproof check`` is a straight line (issue #42): the CLI parses, makes one library call
(``runs/check_run.check``) and one render call (``render/check.render``), whatever it is
asked (safety, ``--liveness``, a liveness property by name, ``--all``)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.render import check as render_module
from kvproof.checker.runs import check_run

CLI = Path(__file__).resolve().parents[3] / "checker" / "cli" / "check.py"


def test_the_cli_module_calls_the_library_once_and_the_renderer_once() -> None:
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    calls = [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    library = [c for c in calls if (imported.get(c) or "").startswith("kvproof.checker.runs")]
    renders = [c for c in calls if (imported.get(c) or "").startswith("kvproof.checker.render")]
    assert library == ["CheckOptions", "check"]  # the options, then the one call
    assert renders == ["render"]
    # no second route: nothing of verify/ (phases, liveness) is reached from the CLI
    assert not [m for m in imported.values() if m.startswith("kvproof.checker.verify")]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "sglang-0.5.19-pd"],
        ["check", "sglang-pd-quarantine", "--liveness"],
        ["check", "sglang-pd-quarantine", "--invariant", "answered"],
        ["check", "--all", "--json"],
    ],
)
def test_each_form_of_check_is_one_call_and_one_render(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[tuple[str, Any]] = []

    class Done:
        exit_code = 0

    def fake_check(names: Any, **kw: Any) -> Done:
        called.append(("check", kw["options"]))
        return Done()

    def fake_render(console: Any, run: Any, *, as_json: bool, raw: bool = False) -> None:
        called.append(("render", as_json))

    monkeypatch.setattr(check_run, "check", fake_check)
    monkeypatch.setattr(render_module, "render", fake_render)
    assert main(argv) == 0
    assert [c[0] for c in called] == ["check", "render"]
    options = called[0][1]
    assert options.liveness == ("--liveness" in argv)
