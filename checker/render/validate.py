"""``kvproof validate``'s run for people, and its ``--json`` object (``validate_run.py``
holds the run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def validate_json(report: Any) -> dict[str, Any]:
    """``kvproof validate --json``: the counts, the first event not enabled, the violations."""
    bad = report.first_bad
    return {
        "variant": report.variant,
        "events": report.events,
        "checked": report.checked,
        "first_not_enabled": None
        if bad is None
        else {"line": bad.line, "event": str(bad.action), "model": report.context},
        "violations": [{"line": n, "invariant": i} for n, i in report.violations],
        "exit_code": report.exit_code,
    }
