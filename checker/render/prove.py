"""``kvproof prove``'s run for people, or as JSON (``prove_run.py`` holds the run)."""

from __future__ import annotations

import json
from typing import Any

from kvproof.checker.render.check_text import render_assumptions
from kvproof.checker.report.proof_report import render_proof
from kvproof.checker.report.written import wrote
from kvproof.checker.runs.prove_run import ProveRun, VariantProof


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
