"""``kvproof check`` and ``kvproof report`` are straight lines (issue #42): the CLI parses,
makes one library call (``runs/check_run.check``, ``runs/replay_run.report``) and one render
call (``render/check.render``, ``render/replay.print_written``), whatever it is asked
(safety, ``--liveness``, a liveness property by name, ``--all``; a report with or without
the replay); ``report --max-new-tokens 0`` stays one line naming the flag."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.render import check as render_module
from kvproof.checker.render import replay as replay_render
from kvproof.checker.runs import check_run, replay_run

ROOT = Path(__file__).resolve().parents[3]
TRACE = ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl"


def _calls(command: str) -> tuple[list[str], list[str], list[str]]:
    """The command's CLI module: its calls into the library, into the renderers, and the
    modules it imports from."""
    tree = ast.parse((ROOT / "checker" / "cli" / f"{command}.py").read_text(encoding="utf-8"))
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
    return library, renders, list(imported.values())


def test_the_cli_module_calls_the_library_once_and_the_renderer_once() -> None:
    library, renders, imported = _calls("check")
    assert library == ["CheckOptions", "check"]  # the options, then the one call
    assert renders == ["render"]
    # no second route: nothing of verify/ (phases, liveness) is reached from the CLI
    assert not [m for m in imported if m.startswith("kvproof.checker.verify")]


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


def test_the_report_cli_calls_the_library_once_and_the_renderer_once() -> None:
    library, renders, imported = _calls("report")
    assert library == ["report"]
    assert renders == ["print_written"]
    # the CLI does none of the work itself: no trace, protocol, variant, engine or page
    work = ("kvproof.model", "kvproof.spec", "kvproof.checker.traces", "kvproof.checker.report")
    assert not [m for m in imported if m.startswith(work)]


@pytest.mark.parametrize("extra", [[], ["--no-replay"], ["--variant", "sglang-0.5.20-pd"]])
def test_each_form_of_report_is_one_call_and_one_render(
    extra: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[tuple[str, Any]] = []
    out = tmp_path / "r.html"

    def fake_report(
        path: str,
        out: Any,
        variant_name: str | None = None,
        *,
        replay: bool = True,
        max_new_tokens: int = 32,
    ) -> Any:
        called.append(("report", (path, str(out), variant_name, replay, max_new_tokens)))
        return replay_run.ReportRun(Path(out), None)

    monkeypatch.setattr(replay_run, "report", fake_report)
    monkeypatch.setattr(replay_render, "print_written", lambda run: called.append(("print", run)))
    assert main(["report", str(TRACE), "--html", str(out), *extra]) == 0
    assert [c[0] for c in called] == ["report", "print"]
    variant = extra[1] if "--variant" in extra else None
    assert called[0][1] == (str(TRACE), str(out), variant, "--no-replay" not in extra, 32)


def test_max_new_tokens_below_one_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    argv = ["report", str(TRACE), "--html", str(out), "--max-new-tokens", "0", "--no-replay"]
    assert main(argv) == 2
    assert capsys.readouterr().err == "kvproof: error: --max-new-tokens: must be >= 1\n"
    assert not out.exists()
