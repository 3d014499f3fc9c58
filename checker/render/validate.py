"""``kvproof validate``'s run for people (``validate_run.py`` holds the run)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.runs.validate_run import ValidateRun


def render(console: Any, run: ValidateRun) -> None:
    """The log's verdict for people: steps checked, broken invariants, the first bad event."""
    report, log = run.report, run.log
    console.print(
        f"{log}: {report.checked} of {report.events} events are steps of [bold]{report.variant}[/]"
    )
    for line, inv in report.violations:
        console.print(f"[bold red]invariant {inv} violated[/] after the event on line {line}")
    bad = report.first_bad
    if bad is not None:
        console.print(
            f"[bold red]NOT ENABLED[/] {log}:{bad.line}: {bad.action} is not an enabled "
            f"action of the model"
        )
        for line in report.context:
            console.print(f"  model: {line}")
    elif not report.violations:
        console.print("[green]the log is a run of the model[/]")
