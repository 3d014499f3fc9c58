"""``check --liveness``'s report for people (``liveness_run.py`` holds the run)."""

from __future__ import annotations

import json
import sys
from typing import Any

from kvproof.checker.runs.liveness_run import LivenessRun
from kvproof.checker.verify.liveness import LivenessCheck


def render_run(console: Any, run: LivenessRun, *, as_json: bool, raw: bool = False) -> None:
    """With ``as_json`` the document goes to stdout and ``console`` (stderr) only names the
    files written."""
    from kvproof.checker.report.written import wrote

    if as_json:
        json.dump(run.to_json(), sys.stdout, indent=2)
        print()
    else:
        for check, doc in zip(run.checks, run.docs, strict=True):
            render(console, check, doc["liveness"], raw=raw)
    if run.files:
        wrote(console, run.files)


def render_expectations(console: Any, out: dict) -> None:
    """``check --all``'s liveness table: each variant's [expect] liveness keys."""
    if not out:
        return
    from rich.table import Table

    from kvproof.checker.report.tables import print_table

    table = Table(title="liveness (fair lassos, complete at 2 requests, 1 page)")
    for col in ("variant", "property", "expected", "got", "matches"):
        table.add_column(col)
    for name, data in out.items():
        for p in data["properties"]:
            table.add_row(
                name,
                p["name"],
                p["expected"] or "-",
                p["verdict"],
                "yes" if p["matches"] else "[red]NO[/]",
            )
    print_table(console, table)


def render(console: Any, check: LivenessCheck, data: dict[str, Any], *, raw: bool = False) -> None:
    """``raw``: a lasso's steps as the model's action labels, not engine words."""
    from kvproof.checker.report.engine_words import step_words, voice_of

    voice = voice_of(check.variant.engine, getattr(check.variant.switches, "transfer_mode", ""))
    raw = raw or check.protocol.name != "handoff"  # a user protocol: its own action labels
    sizes = data["sizes"]
    scope = "complete: every depth" if data["complete"] else "truncated: a lower bound"
    console.print(
        f"[bold]{check.variant.name}[/] liveness: {sizes['Req']} requests, {sizes['Page']}"
        f" page(s), explicit-state fair-lasso search ({scope}; {data['states']} states,"
        f" {data['seconds']:.2f} s)",
        highlight=False,
    )
    console.print(
        "fairness: weak, on every engine step"
        + "".join(f"; {f}" for f in data["fairness"] if not f.endswith("(engine)")),
        highlight=False,
    )
    for a in data["assumptions"]:
        state = "in force" if a["active"] else "dropped (--without)"
        need = ""
        if a.get("needed") is None and "needed" in a:
            need = "; not assessed: every property fails with it too"
        elif "needed" in a:
            need = f"; needed: without it {a['hides']} fails" if a["needed"] else "; unnecessary"
        console.print(f"  assumption {a['name']} ({state}{need})", highlight=False)
    for p in data["properties"]:
        if p["verdict"] == "holds":
            note = "holds at every depth at this size" if data["complete"] else "holds"
            console.print(f"  [green]holds[/] {p['name']}: {p['statement']} ({note})")
            continue
        console.print(
            f"  [red]VIOLATED[/] {p['name']}: {p['statement']}; fair lasso for {p['instance']}",
            highlight=False,
        )
        loop = p["loop"]
        said = step_words(p["trace"], voice)
        for row, words in zip(p["trace"], said, strict=True):
            if row["step"] == loop + 1:
                console.print("     -- loop: repeats forever --", highlight=False)
            console.print(f"    {row['step']:>2} {row['label'] if raw else words}", highlight=False)
        if loop == len(p["trace"]):
            console.print(
                "     -- loop: stays here forever (no fair step is enabled) --", highlight=False
            )
    bad = [p["name"] for p in data["properties"] if not p["matches"]]
    if bad:
        console.print(f"  [red]does not match [expect][/]: {', '.join(bad)}")
