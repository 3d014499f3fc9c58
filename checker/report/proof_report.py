"""Rich rendering of proofs and counterexamples to induction."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kvproof.checker.report.tables import print_table
from kvproof.model.search.induction import ProofResult


def render_proof(console: Console, name: str, result: ProofResult, cores: bool = False) -> None:
    if result.proved:
        console.print(
            f"[bold]{name}[/]: [green]proved for all numbers of requests and pages[/] "
            f"({len(result.conjuncts)} conjuncts, {result.queries} solver queries, "
            f"{result.seconds:.2f} s)"
        )
        if cores:
            table = Table(title="what each step needed (unsat cores)", title_justify="left")
            table.add_column("action / conjunct")
            table.add_column("conjuncts used")
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
        title=f"counterexample to induction ({cti['query']}, {sizes})",
        title_justify="left",
        show_header=False,  # two columns, a name and its value: no header row
    )
    table.add_column("what")
    table.add_column("value")
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
