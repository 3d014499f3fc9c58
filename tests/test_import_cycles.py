"""No import cycles among kvproof's modules, and no library module that imports the CLI.

Issue #26's "Done when": the graph counts every import a module can execute, those inside
functions too (a lazy import that climbs back into a caller is still a cycle a reader has
to hold in their head), and leaves out imports under ``if TYPE_CHECKING:``, which never
run. The engine's rules (``refimpl/rules/``) may not import ``refimpl/handoff.py`` at all,
not even for typing: a rule reads like one event of the model, not like the class.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_architecture import ROOT, module_name, sources

from kvproof.model.search.scc import components

MODULES = {module_name(p): p for p in sources()}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def imports_of(path: Path, *, typing_too: bool = False) -> set[str]:
    """The kvproof modules ``path`` imports anywhere in its body; imports under
    ``if TYPE_CHECKING:`` only when ``typing_too``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing_too:
            for child in node.orelse:  # the else branch does run
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(path, node)
            # ``from kvproof.checker import cli`` depends on the module kvproof.checker.cli;
            # ``from kvproof.checker.cli import main`` on the package that defines main.
            found.update(
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {_module(name) for name in found if _module(name)}


def _module(name: str) -> str:
    """The kvproof module ``name`` names: itself, or the module that defines it."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """Module -> the kvproof modules it names in an import. A package's ``__init__`` that
    re-exports its own submodules is not a cycle with them (Python runs the ``__init__``
    first, then the submodule, which does not import the package back): only an import a
    module writes counts, as in import-linter's graph."""
    return {name: imports_of(path) - {name} for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (the library's Tarjan,
    ``model/search/scc.py``), each given as one cycle through it, so that a failure names
    modules to untangle, in order."""
    comps = components(graph, lambda v: sorted(graph.get(v, ())))
    return [_one_cycle(graph, set(c)) for c in comps if len(c) > 1]


def _one_cycle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest path back to the component's first module, by breadth-first search."""
    start = min(comp)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_library_module_imports_the_cli() -> None:
    cli = ("kvproof.checker.cli", "kvproof.ops.cli")
    bad = {
        name: sorted(t for t in imports_of(path) if t.startswith(cli))
        for name, path in MODULES.items()
        if not name.startswith(cli)
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_engine_rules_never_import_the_handoff_class() -> None:
    rules = sorted((ROOT / "refimpl" / "rules").rglob("*.py"))  # none yet: nothing to check
    bad = {
        str(p.relative_to(ROOT)): sorted(
            t for t in imports_of(p, typing_too=True) if t == "kvproof.refimpl.handoff"
        )
        for p in rules
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_graph_sees_lazy_imports_and_skips_type_checking(tmp_path: Path) -> None:
    """The rules themselves: a function-level import counts, a TYPE_CHECKING one does not
    (unless asked), and a made-up two-module loop is reported as a cycle."""
    probe = ROOT / "refimpl" / "_probe_cycle.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from kvproof.refimpl.handoff import Handoff\n"
        "def f():\n"
        "    from kvproof.refimpl import cluster\n",
        encoding="utf-8",
    )
    try:
        assert "kvproof.refimpl.cluster" in imports_of(probe)
        assert "kvproof.refimpl.handoff" not in imports_of(probe)
        assert "kvproof.refimpl.handoff" in imports_of(probe, typing_too=True)
    finally:
        probe.unlink()
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(loop) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
