"""``kvproof fuzz``'s run for people, or as JSON (``fuzz_run.py`` holds the run).

``fuzz_json`` is the one builder of ``--json`` (it was built by hand twice, issue #26). One
header for both phases (the variant, the campaign's counts, time, workers, seed), then the
finding: the engine campaign's (``kind``, ``shows``, ``detail``, its trace and HTML report),
or the model's, with the engine's verdict on the same trace under ``engine``. A model-side
run did not run the campaign: its counts are the one confirmed finding, and it has no
``ray`` key (the model-first phase never runs on Ray).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvproof.checker.render.replay import SHOWS, failure_summary
from kvproof.checker.report.tables import print_table, wrote

if TYPE_CHECKING:
    from kvproof.checker.runs.fuzz_run import FuzzRun


def model_finding(console: Any, variant: Any, found: Any, saved: Path) -> None:
    """The model-side finding, printed (and flushed) before the engine or torch is loaded,
    so a buggy variant reports within a second from the shell."""
    console.print(
        f"[bold red]VIOLATION[/] (model-side finding, {found.seconds:.2f} s, "
        f"{found.walks} model walks): invariant [bold]{found.invariant}[/] violated "
        f"after {len(found.trace.steps)} steps: {_labels(variant, found.trace)}"
    )
    wrote(console, [saved])
    console.print("confirming on the engine ...")
    sys.stdout.flush()  # reported now, not when the engine is done


def render(console: Any, run: FuzzRun) -> None:
    """The engine's verdict on a model-side finding, or the engine campaign's table."""
    side = run.model
    if side is None:
        _campaign(console, run)
        return
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
    console.print(f"shrunk trace ({len(f.trace.steps)} steps): {_labels(run.variant, f.trace)}")
    wrote(console, run.files)
    console.print(f"replay: kvproof replay {run.trace_file}", highlight=False, soft_wrap=True)


def _labels(variant: Any, trace: Any) -> str:
    """The trace's steps as the model's labels: ``arrive(r0), alloc(r0, p0), ...``."""
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.explain import action_label

    return ", ".join(action_label(protocol_of(variant), x) for x in trace.steps)


def fuzz_json(run: Any) -> dict[str, Any]:
    """``run`` is a ``FuzzRun`` (``fuzz_run.py``)."""
    from kvproof.checker.conformance.fuzz import COUNTERS

    if run.model is not None:
        found = run.model.found
        counts = {"traces": 0, "steps": 0, "faults_injected": 0}
        counts |= {key: int(k == _model_kind(run)) for k, key in COUNTERS.items()}
        seconds: float = found.seconds + run.model.engine_seconds
        first: float | None = found.seconds
        workers = 1
    else:
        s = run.result.stats
        counts = {"traces": s.traces, "steps": s.steps, "faults_injected": s.faults}
        counts |= {key: getattr(s, key) for key in COUNTERS.values()}
        seconds, first, workers = s.seconds, s.first_finding_s, run.workers
    out: dict[str, Any] = {
        "variant": run.variant.name,
        **counts,
        "seconds": round(seconds, 2),
        "seconds_to_first_finding": None if first is None else round(first, 2),
        "workers": workers,
        "seed": run.options.seed,
        "faults": run.options.faults,
    }
    if run.model is not None:
        out["finding"] = _model_finding(run)
        return out
    out["ray"] = run.options.ray
    f = run.finding
    out["finding"] = (
        None
        if f is None
        else {
            "kind": f.kind,
            "shows": f.shows,
            "detail": f.detail,
            "steps": [str(x) for x in f.trace.steps],
            "trace": str(run.trace_file),
            "replay": f"kvproof replay {run.trace_file}",
            "html": None if run.html is None else str(run.html),
        }
    )
    return out


def _model_kind(run: Any) -> str:
    from kvproof.checker.conformance.model_first import confirmed_kind

    return confirmed_kind(run.model.report)


def engine_summary(report: Any) -> str:
    """The engine's verdict on the model's trace, in replay's words."""
    if report.failed:
        return failure_summary(report)
    return "the engine does not break the invariant the model breaks (a divergence)"


def _model_finding(run: Any) -> dict[str, Any]:
    side = run.model
    found, report = side.found, side.report
    return {
        "kind": _model_kind(run),
        "shows": report.shows,
        "source": "model",
        "invariant": found.invariant,
        "detail": f"model violates {found.invariant}",
        "steps": [str(x) for x in found.trace.steps],
        "model_walks": found.walks,
        "seconds": round(found.seconds, 3),
        "trace": str(run.trace_file),
        "replay": f"kvproof replay {run.trace_file}",
        "engine": {
            "confirmed": side.confirmed,
            "shows": report.shows,
            "leak": report.leak,
            "summary": engine_summary(report),
            "seconds": round(side.engine_seconds, 2),
        },
    }
