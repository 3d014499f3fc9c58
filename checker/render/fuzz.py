"""``kvproof fuzz``'s run for people, or as JSON (``fuzz_run.py`` holds the run)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kvproof.checker.report.replay_text import SHOWS
from kvproof.checker.report.tables import print_table
from kvproof.checker.report.written import wrote
from kvproof.checker.runs.fuzz_run import FuzzRun


def model_finding(console: Any, variant: Any, found: Any, saved: Path) -> None:
    """The model-side finding, printed (and flushed) before the engine or torch is loaded,
    so a buggy variant reports within a second from the shell."""
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.explain import action_label

    trace = found.trace
    steps = ", ".join(action_label(protocol_of(variant), x) for x in trace.steps)
    console.print(
        f"[bold red]VIOLATION[/] (model-side finding, {found.seconds:.2f} s, "
        f"{found.walks} model walks): invariant [bold]{found.invariant}[/] violated "
        f"after {len(trace.steps)} steps: {steps}"
    )
    wrote(console, [saved])
    console.print("confirming on the engine ...")
    sys.stdout.flush()  # reported now, not when the engine is done


def render(console: Any, run: FuzzRun) -> None:
    if run.model is not None:
        _engine_verdict(console, run)
    else:
        _campaign(console, run)


def _engine_verdict(console: Any, run: FuzzRun) -> None:
    from kvproof.checker.render.fuzz_json import engine_summary

    side = run.model
    assert side is not None
    if run.html is not None:
        wrote(console, [run.html])
    tag = "[bold red]ENGINE CONFIRMS[/]" if side.confirmed else "[bold red]ENGINE DISAGREES[/]"
    console.print(f"{tag} ({side.engine_seconds:.2f} s): {engine_summary(side.report)}")
    console.print(
        f"what clients saw: {SHOWS[side.report.shows]}\nreplay: kvproof replay {run.trace_file}"
    )


def _campaign(console: Any, run: FuzzRun) -> None:
    from rich.table import Table

    from kvproof.checker.conformance.fuzz import COUNTERS
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.explain import action_label

    row = run.to_json()
    faults = " with faults" if run.options.faults else ""
    table = Table(title=f"fuzz {run.variant.name}{faults}")
    cols = ("traces", "steps", "faults_injected", *COUNTERS.values(), "seconds")
    for c in cols:
        table.add_column(c.replace("_", " "), justify="right")
    table.add_row(*(str(row[c]) for c in cols))
    print_table(console, table)
    f = run.finding
    if f is None:
        console.print(f"[green]no finding[/] in {row['traces']} traces")
        return
    kind = f.kind.replace("_", " ").upper()
    console.print(f"[bold red]{kind}[/]: {f.detail}")
    console.print(
        f"shrunk trace ({len(f.trace.steps)} steps): "
        + ", ".join(action_label(protocol_of(run.variant), x) for x in f.trace.steps)
    )
    wrote(console, run.files)
    console.print(f"replay: kvproof replay {run.trace_file}", highlight=False, soft_wrap=True)
