"""A replay's verdict in words: what the clients saw, and what failed, by name.

Shared by ``replay`` (its report), ``fuzz`` (the engine's confirmation of a model-side
finding) and ``report`` (the HTML page's replay line); duck-typed on the conformance
``ReplayReport`` so that this room needs no engine.
"""

from __future__ import annotations

from typing import Any

SHOWS = {
    "leak": "LEAK: another tenant's canary in a response",
    "wrong_answer": "a wrong answer (tokens unlike the single node's), no foreign canary in it",
    "engine_state": "an invariant broken on the engine's state only; no response shows it",
    "nothing": "nothing wrong",
}


def failure_summary(report: Any) -> str:
    """What failed, by name: "leak" only when a response carried another tenant's canary."""
    parts = []
    if report.crash:
        parts.append("the engine crashed")
    if report.divergence is not None:
        parts.append(f"divergence at step {report.divergence.step}")
    if report.lasso is not None and report.lasso.repeats:
        parts.append(report.lasso.summary())
    if report.leak:
        parts.append("leak: a response carried another tenant's canary")
    elif report.failing_answers:
        parts.append("wrong answer: tokens unlike the single-node engine's")
    broken = sorted({n for _, n in report.engine_violations if n != "isolation" or not report.leak})
    if broken:
        parts.append("the engine violates " + ", ".join(broken))
    return "; ".join(parts)
