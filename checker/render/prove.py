"""``kvproof prove``'s run for people (rich tables: the proof, or the counterexample to
induction), or as JSON (``prove_run.py`` holds the run)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from kvproof.checker.render.check_text import render_assumptions
from kvproof.checker.report.tables import print_table, wrote
from kvproof.checker.runs.prove_run import ProveRun, VariantProof
from kvproof.model.search.induction import ProofResult


def render(console: Any, run: ProveRun, *, as_json: bool, cores: bool = False) -> None:
    """With ``as_json`` the document goes to stdout; ``console`` (stderr) names the files."""
    if not as_json:
        for p in run.proofs:
            if p.inference is not None:
                _inference(console, p, run)
            else:
                render_proof(console, p.name, p.proof, cores=cores)
                render_assumptions(console, p.data["assumptions"])
    if as_json:
        print(json.dumps(run.to_json(), indent=2))
    if run.html is not None:
        wrote(console, [run.html])


def _inference(console: Any, p: VariantProof, run: ProveRun) -> None:
    result = p.inference
    color = "green" if result.proved else "red"
    console.print(f"[bold]{p.name}[/]: [{color}]{result.summary}[/]")
    if result.proved:
        console.print("  inferred invariant (with the safety invariants):")
        for c in result.inferred:
            console.print(f"    {c.text}", highlight=False, markup=False)
        if run.saved is not None:
            console.print(f"  saved to {run.saved} (prove --strengthening {run.saved})")
        return
    _render_cti(console, result.cti)
    if p.proof is not None:
        render_proof(console, p.name, p.proof, cores=False)


def _render_cti(console: Any, cti: Any) -> None:
    """Inference's counterexample: its pre-state satisfies every surviving candidate."""
    if not cti:
        return
    where = ", ".join(f"{n} {s}" for s, n in cti["sizes"].items())
    console.print(
        f"  {cti['conjunct']} broken by {cti['action']} from a state that satisfies every "
        f"surviving candidate ({where}):",
        highlight=False,
    )
    for line in cti["pre"]:
        console.print(f"    pre  {line}", highlight=False, markup=False)
    for line in cti["changes"]:
        console.print(f"    then {line}", highlight=False, markup=False)


def render_proof(console: Console, name: str, result: ProofResult, cores: bool = False) -> None:
    if result.proved:
        console.print(
            f"[bold]{name}[/]: [green]proved for all numbers of requests and pages[/] "
            f"({len(result.conjuncts)} conjuncts, {result.queries} solver queries, "
            f"{result.seconds:.2f} s)"
        )
        if cores:
            title = "what each step needed (unsat cores)"
            table = Table("action / conjunct", "conjuncts used", title=title, title_justify="left")
            for key, used in sorted(result.cores.items()):
                table.add_row(key, ", ".join(used) or "(none: the action alone)")
            print_table(console, table)
        return
    console.print(f"[bold]{name}[/]: [red]not proved[/]: {result.summary}")
    if result.cti is None:
        return
    cti = result.cti.describe()
    sizes = ", ".join(f"{v} {k}" for k, v in cti["sizes"].items())
    table = Table(
        "what",
        "value",
        title=f"counterexample to induction ({cti['query']}, {sizes})",
        title_justify="left",
        show_header=False,  # two columns, a name and its value: no header row
    )
    table.add_row(
        "pre-state (non-default cells)", "\n".join(cti.get("pre", [])) or "(all defaults)"
    )
    if "action" in cti:
        table.add_row("action", cti["action"])
        table.add_row("changes", "\n".join(cti.get("changes", [])))
    table.add_row("fails", cti["conjunct"])
    print_table(console, table)
    console.print(
        "  The pre-state satisfies every conjunct; the step breaks one. Either the state is"
        " unreachable (strengthen the invariant) or the protocol is wrong (check it with BMC)."
    )
