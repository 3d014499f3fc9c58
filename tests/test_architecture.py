"""The import rules of ARCHITECTURE.md, checked on the AST of every source file.

An AST walk sees ``import kvproof.model``, ``from kvproof import model``, ``from kvproof.model
import x`` and relative imports alike (the string match it replaces missed the second form).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spec", "model", "kernels", "refimpl", "checker", "ops")

# Room -> rooms it may import (besides itself and the top-level ``kvproof`` for __version__).
# A room is a top-level package, or ``checker.<subpackage>`` / ``ops.<subpackage>``.
ALLOWED: dict[str, set[str]] = {
    "spec": set(),
    "checker": set(),
    "ops": set(),
    "model": {"spec"},
    "kernels": {"spec"},
    # The engine must not know the model, or differential testing proves nothing.
    "refimpl": {"spec", "kernels"},
    "checker.traces": {"spec", "model"},
    # Where work units run (serial, local pool, Ray): knows no protocol and no engine.
    "checker.distrib": {"spec"},
    "checker.verify": {"spec", "model", "checker.distrib"},
    "checker.report": {"spec", "model", "checker.verify", "checker.traces"},
    # Renderers by command: they read the runs' records (``checker.runs``: only the run
    # types, under ``if TYPE_CHECKING:``; a run imports its renderers to write its files).
    "checker.render": {
        "spec",
        "model",
        "checker.verify",
        "checker.traces",
        "checker.report",
        "checker.conformance",
        "checker.conform",  # conform's run and its --all matrix (render/conform.py)
        "checker.runs",
    },
    "checker.conformance": {
        "spec",
        "model",
        "kernels",
        "refimpl",
        "checker.traces",
        "checker.verify",
        "checker.distrib",
    },
    # The real SGLang release code against the model: no kvproof engine in between.
    # Its walks run on the executor (checker.distrib) through conform's room (issue 39).
    "checker.upstream": {"spec", "model", "checker.traces", "checker.distrib", "checker.conform"},
    # conform's run, walk and renderers (issue 39): the model against an engine's code.
    # checker/conform/vllm/ (vLLM's adapter, issue 40) reuses the SGLang adapter's
    # permissive stand-ins, clock and exception finding; the core itself imports no engine.
    "checker.conform": {"spec", "model", "checker.traces", "checker.upstream"},
    # Operations, not verification. The audit and the probe need neither model nor engine:
    # an operator runs them on a laptop.
    "ops.audit": {"spec"},
    "ops.probe": {"spec"},
    "ops.serve": {"spec", "kernels", "refimpl"},
    # advise (issue 41), the operator's answer: a release's code (upstream) matched, then
    # its variant checked (runs). It reads verdicts; nothing in checker/ reads it.
    "ops.advise": {
        "spec",
        "model",
        "checker.traces",
        "checker.verify",
        "checker.report",
        "checker.upstream",
        "checker.conform",  # vLLM's adapter (advise vllm==VERSION)
        "ops.audit",
        "checker.runs",
        "checker.render",  # a counterexample's rows and explanation (render/check_json.py)
    },
    # One run object per command (issue #26): strings the rooms' phases into one library call.
    "checker.runs": {
        "spec",
        "model",
        "kernels",
        "refimpl",
        "checker.traces",
        "checker.verify",
        "checker.report",
        "checker.render",
        "checker.conformance",
        "checker.distrib",
        "checker.upstream",  # conform's run (issue 39)
        "checker.conform",
    },
    "checker.cli": {"*"},
    # The operator commands' CLI modules (registered by checker/cli's parser): the shell's
    # pieces (argument types, console, output paths, tables) and the product each calls.
    "ops.cli": {
        "spec",
        "checker.cli",
        "checker.report",
        "ops.advise",
        "ops.audit",
        "ops.probe",
        "ops.serve",
    },
}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "kvproof" or len(parts) < 2:
        return None
    if parts[1] in ("checker", "ops") and len(parts) >= 3:
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["kvproof", *parts])


def imported(path: Path, package: str | None = None) -> list[str]:
    """Absolute names of every module ``path`` imports, at any depth (``TYPE_CHECKING``
    blocks and functions too), relative imports resolved against ``package`` (default:
    the one ``path`` is in; a planted file outside the tree names its own)."""
    if package is None:
        mod = module_name(path)
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from kvproof import model`` imports the module kvproof.model.
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def own_room(path: Path) -> str:
    room = room_of(module_name(path))
    assert room is not None
    return room


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_rooms(path: Path) -> None:
    room = own_room(path)
    allowed = ALLOWED.get(room)
    assert allowed is not None, f"{room} has no rule in ARCHITECTURE.md / ALLOWED"
    if "*" in allowed:
        return
    for name in imported(path):
        target = room_of(name)
        if target is None or target == room:
            continue
        if name in ("kvproof", "kvproof.__version__"):
            continue
        # ``from kvproof.checker import x`` resolves to the room checker.x.
        assert target in allowed, f"{path.relative_to(ROOT)} imports {name} ({room} -> {target})"


@pytest.mark.parametrize("room", ["checker", "ops"])
def test_rooms_of_rooms_have_only_subpackages(room: str) -> None:
    loose = [p.name for p in (ROOT / room).glob("*.py") if p.name != "__init__.py"]
    assert loose == []


def test_no_source_file_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}


def test_the_rule_catches_a_from_kvproof_import(tmp_path: Path) -> None:
    """The rule itself must see the form the old string match missed."""
    fake = ROOT / "refimpl" / "_probe_import.py"
    fake.write_text("from kvproof import model\n", encoding="utf-8")
    try:
        names = imported(fake)
    finally:
        fake.unlink()
    assert "kvproof.model" in names and room_of("kvproof.model") not in ALLOWED["refimpl"]


def import_time_thread_settings(path: Path) -> list[int]:
    """Lines of module-level ``set_num_threads`` calls: they change torch for whoever
    imports the module (issue 16 item 6); the session fixture in ``conftest.py`` and the
    commands set it when they run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [
        node.lineno
        for stmt in tree.body
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for node in ast.walk(stmt)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "set_num_threads"
    ]
    return calls


def test_no_thread_setting_at_import_time(tmp_path: Path) -> None:
    files = [*sources(), *sorted((ROOT / "tests").rglob("*.py"))]
    found = {
        str(p.relative_to(ROOT)): lines for p in files if (lines := import_time_thread_settings(p))
    }
    assert found == {}
    probe = tmp_path / "probe.py"  # the rule sees the form it forbids
    probe.write_text("import torch\ntorch.set_num_threads(1)\n", encoding="utf-8")
    assert import_time_thread_settings(probe) == [2]


# Folders of test data, not rooms.
DATA_DIRS = {"fixtures", "golden"}
# A test that spans a whole room of rooms stays at its top (``check --all``'s golden output).
ROOM_WIDE_TESTS = {"checker": {"test_golden_check.py"}, "model": set(), "ops": set()}


def test_tests_mirror_the_rooms() -> None:
    """Each folder under tests/ is a room of the source (issue 42 item 7), and a room that has
    rooms of its own keeps no loose tests beside them."""
    tests = ROOT / "tests"
    strays = [
        str(d.relative_to(tests))
        for d in tests.rglob("*")
        if d.is_dir()
        and d.name != "__pycache__"
        and not DATA_DIRS & set(d.relative_to(tests).parts)
        and not (ROOT / d.relative_to(tests)).is_dir()
    ]
    assert strays == []
    loose = {
        room: sorted(p.name for p in (tests / room).glob("*.py") if p.name not in allowed)
        for room, allowed in ROOM_WIDE_TESTS.items()
    }
    assert loose == {room: [] for room in ROOM_WIDE_TESTS}
