"""``kvproof check``'s run for people (rich tables, or plain lines in a pipe) or as JSON.

The run holds everything (``check_run.py``); this only prints it, in the order the command
always printed: per variant its report, its complete search and the files written, then the
``--all`` table, then the JUnit and SARIF reports written.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kvproof.checker.report import check_report
from kvproof.checker.report.written import wrote
from kvproof.checker.runs.check_run import CheckRun, VariantRun


def render(console: Any, run: CheckRun, *, as_json: bool, raw: bool = False) -> None:
    """With ``as_json`` the document goes to stdout and ``console`` (stderr) only names the
    files written."""
    for v in run.variants:
        if not as_json and not run.gate:
            check_report.render_check(console, v.check, v.data, raw=raw)
        if not as_json and v.complete is not None:
            render_complete(console, v)
        if v.files:
            wrote(console, v.files)
    if run.gate and not as_json:
        from kvproof.checker.runs.render_liveness import render_expectations

        check_report.render_all(console, run.checks)
        render_expectations(console, run.liveness)
    if as_json:
        json.dump(run.to_json(), sys.stdout, indent=2)
        print()
    for report in (run.junit, run.sarif):
        if report is not None:
            wrote(console, [report])


def render_complete(console: Any, v: VariantRun) -> None:
    assert v.complete is not None
    console.print(
        f"[bold]{v.check.variant.name}[/] complete: {v.complete.summary}", highlight=False
    )
    for row in v.data["complete"].get("trace", []):
        console.print(f"  {row['step']:>2} {row['label']}", highlight=False)
