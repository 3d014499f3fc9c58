"""The one builder of ``kvproof fuzz --json`` (it was built by hand twice, issue #26).

One header for both phases (the variant, the campaign's counts, time, workers, seed), then
the finding: the engine campaign's (``kind``, ``shows``, ``detail``, its trace and HTML
report), or the model's, with the engine's verdict on the same trace under ``engine``. A
model-side run did not run the campaign: its counts are the one confirmed finding, and it
has no ``ray`` key (the model-first phase never runs on Ray).
"""

from __future__ import annotations

from typing import Any


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
    from kvproof.checker.report.replay_text import failure_summary

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
