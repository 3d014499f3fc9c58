"""``kvproof check``'s run for people (rich tables, or plain lines in a pipe) or as JSON.

The run holds everything (``checker/runs/check_run.py``); this only prints it, in the order
the command always printed: per variant its report (safety, the complete search, or the
fair lassos) and the files written, then the ``--all`` tables, then the JUnit and SARIF
reports written. Every part reads the one ``--json`` document (``check_json.py``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kvproof.checker.render import check_text
from kvproof.checker.render.check_json import document, variant_json
from kvproof.checker.report.tables import wrote

if TYPE_CHECKING:
    from kvproof.checker.runs.check_run import CheckRun


def render(console: Any, run: CheckRun, *, as_json: bool, raw: bool = False) -> None:
    """With ``as_json`` the document goes to stdout and ``console`` (stderr) only names the
    files written; ``raw``: the steps as the model's cells, not engine words."""
    docs = [variant_json(v) for v in run.variants]
    for v, doc in zip(run.variants, docs, strict=True):
        if not as_json and v.invariants is None:
            assert v.liveness is not None
            check_text.render_liveness(console, v.liveness, doc["liveness"], raw=raw)
        elif not as_json and not run.gate:
            check_text.render_check(console, v, doc, raw=raw)
        if not as_json and v.complete is not None:
            console.print(
                f"[bold]{v.variant.name}[/] complete: {v.complete.summary}", highlight=False
            )
            for row in doc["complete"].get("trace", []):
                console.print(f"  {row['step']:>2} {row['label']}", highlight=False)
        if v.files:
            wrote(console, v.files)
    if run.gate and not as_json:
        safety = [v for v in run.variants if v.invariants is not None]
        if safety:
            check_text.render_all(console, safety)
        lively = {d["variant"]: d["liveness"] for d in docs if "liveness" in d}
        check_text.render_expectations(console, lively if safety else {})
    if as_json:
        print(json.dumps(document(run, docs), indent=2))
    wrote(console, [report for report in (run.junit, run.sarif) if report is not None])
