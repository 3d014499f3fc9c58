"""``kvproof check``'s report for people: per variant, and the ``--all`` tables; the liveness
phase's too (a variant's fair lassos, and ``--all``'s liveness table)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from kvproof.checker.report.engine_words import LOOP_START, Voice, back_to, step_words, voice_for
from kvproof.checker.report.tables import print_table
from kvproof.checker.report.trace_view import cells_text
from kvproof.checker.verify.liveness import LivenessCheck
from kvproof.checker.verify.verdict import VariantVerdict


def render_check(
    console: Console, check: VariantVerdict, data: dict[str, Any], *, raw: bool = False
) -> None:
    """One variant's report from its ``--json`` object (``check_json.variant_json``);
    ``raw``: the steps as the model's cells (``owns(r0, p0): F->T``), not engine words."""
    voice = voice_for(check, raw)  # a user protocol's steps stay its own cells
    sizes = data["sizes"]
    settled = data.get("settled_by") == "proof"
    console.print(
        f"[bold]{data['variant']}[/]  {check.variant.summary}\n"
        f"BMC: {sizes['Req']} requests, {sizes['Page']} pages, depth {data['depth']}, "
        f"{data['seconds']:.2f} s"
        + ("; settled by the proof: no counterexample at any depth or size" if settled else "")
    )
    render_assumptions(console, data.get("assumptions", []))
    for inv in data["invariants"]:
        if inv["verdict"] == "holds":
            continue
        number = f"{inv['number']} " if inv["number"] is not None else ""
        title = (
            f"[red]VIOLATED[/] invariant {number}[bold]{inv['name']}[/]: "
            f"{inv['statement']} ({inv['shortest']}-step shortest"
            + ("" if inv["primary"] else ", runs through an earlier violation")
            + ")"
        )
        print_table(console, trace_table(title, inv["trace"], voice, inv.get("loop")))
        if inv.get("initial"):
            console.print("  initially: " + "; ".join(inv["initial"]))
        console.print(f"  [bold]why:[/] {inv['explanation']}")
    print_table(console, verdict_table(data))
    proof = data.get("proof")
    if proof and proof["proved"]:
        console.print(f"[green]{proof['summary']}[/]")
    elif proof:
        console.print(f"[red]not proved[/]: {proof.get('summary', '')}")


def trace_table(
    title: str, rows: list[dict[str, Any]], voice: Voice | None = None, loop: int | None = None
) -> Table:
    """A trace's steps (``trace_rows``), a lasso's loop between its two marks: as what the
    engines did (``engine_words``), or, without a ``voice`` (``--raw``), the model's cells."""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("action" if voice is None else "event")
    table.add_column("what changed" if voice is None else "what the engines did")
    said = [cells_text(r) for r in rows] if voice is None else step_words(rows, voice)
    for i, (row, text) in enumerate(zip(rows, said, strict=True)):
        if i == loop:
            table.add_row("", f"[bold]{LOOP_START}[/]", "")
        table.add_row(str(row["step"]), row["label"], text)
    if loop is not None:
        table.add_row("", f"[bold]{back_to(loop)}[/]", "")
    return table


def verdict_table(data: dict[str, Any]) -> Table:
    columns = ("#", "invariant", "expected", "got", "depth", "matches")
    table = Table(*columns, title="verdicts", title_justify="left")
    for inv in data["invariants"]:
        got = inv["verdict"]
        color = "green" if got == "holds" else "red"
        depth = str(inv["shortest"]) if got == "violated" else f"<= {inv['depth']}"
        if inv.get("settled_by") == "proof":
            depth = "any (proof)"
        table.add_row(
            str(inv["number"] or "-"),
            inv["name"],
            inv["expected"] or "-",
            f"[{color}]{got}[/]",
            depth,
            "yes" if inv["matches"] else "[red]NO[/]",
        )
    return table


def outcome(check: VariantVerdict) -> str:
    """A check in a few words, for the line a log gets as each variant finishes."""
    if check.invariants is None:  # a liveness-only check
        return "a fair lasso" if check.violated else "holds"
    broken = [r.invariant for r in check.bmc.results if not r.holds]
    if check.proof is not None and not check.proof.proved:
        broken.append("(proof)")
    said = "violated" if check.safety_violated else "holds"
    said += " as expected" if check.safety_match else ", NOT as expected"
    said += f" ({', '.join(broken)})" if broken else ""
    if check.liveness is not None:  # --all's [expect] liveness keys, the job's last phase
        said += "; liveness " + ("as expected" if check.liveness.all_match else "NOT as expected")
    return said


def render_all(console: Console, checks: list[VariantVerdict]) -> None:
    table = Table(title="kvproof check --all", title_justify="left")
    # Names are never cut: the table grows past a narrow terminal rather than fold a name.
    longest = max((len(c.variant.name) for c in checks), default=7)
    table.add_column("variant", no_wrap=True, min_width=longest)
    table.add_column("invariant", no_wrap=True)
    for col in ("expected", "got", "seconds", "ok"):
        table.add_column(col)
    for check in checks:
        for r in check.bmc.results:
            got = "holds" if r.holds else f"violated@{r.shortest}"
            table.add_row(
                check.variant.name,
                r.invariant,
                check.variant.expect.get(r.invariant, "-"),
                got,
                f"{r.seconds:.2f}",
                "[green]yes[/]" if check.matches(r.invariant) else "[red]NO[/]",
            )
        if check.proof is not None:
            table.add_row(
                check.variant.name,
                "(proof)",
                "proved" if not check.variant.buggy else "-",
                "proved" if check.proof.proved else "not proved",
                f"{check.proof.seconds:.2f}",
                "[green]yes[/]" if check.safety_match else "[red]NO[/]",
            )
        if check.variant.assume:
            mark = {True: " (needed)", False: " (unnecessary)", None: " (?)"}
            needed = {n.name: mark[n.needed] for n in check.necessity}
            names = [
                n + needed.get(n, "") + (" DROPPED" if n in check.without else "")
                for n in check.variant.assume
            ]
            table.add_row(check.variant.name, "(assumes)", "; ".join(names), "", "", "")
        table.add_section()
    print_table(console, table)
    bad = [c.variant.name for c in checks if not c.safety_match]
    buggy = sum(1 for c in checks if c.variant.buggy)
    ok = "[green]every verdict matches its expectation[/]"
    said = f"[red]mismatch: {', '.join(bad)}[/]" if bad else ok
    console.print(f"{len(checks)} variants ({buggy} buggy, {len(checks) - buggy} fixed): {said}")


def render_assumptions(console: Console, assumptions: list[dict[str, Any]]) -> None:
    """What the verdict is under: each assumption, why it holds, and whether it is needed."""
    if not assumptions:
        console.print("assumptions: none (the verdict holds in every environment the model has)")
        return
    console.print("[bold]under assumptions[/] (spec/assumptions.py):")
    for a in assumptions:
        state = "in force" if a["active"] else "[yellow]DROPPED (--without)[/]"
        console.print(f"  [bold]{a['name']}[/] ({state}): {a['text']}")
        console.print(f"    here: {a['why']}")
        console.print(f"    source: {a['source']}")
        if "needed" in a:
            color = {True: "cyan", False: "yellow", None: "magenta"}[a["needed"]]
            console.print(f"    [{color}]{a['needed_detail']}[/]")


# -- liveness: fair lassos -------------------------------------------------------------------


def render_expectations(console: Any, out: dict[str, Any]) -> None:
    """``check --all``'s liveness table: each variant's [expect] liveness keys."""
    if not out:
        return
    columns = ("variant", "property", "expected", "got", "matches")
    table = Table(*columns, title="liveness (fair lassos, complete at 2 requests, 1 page)")
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


def render_liveness(
    console: Any, check: LivenessCheck, data: dict[str, Any], *, raw: bool = False
) -> None:
    """``raw``: a lasso's steps as the model's action labels, not engine words."""
    voice = voice_for(check, raw)  # a user protocol: its own action labels
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
        loop, rows = p["loop"], p["trace"]
        said = step_words(rows, voice) if voice else [row["label"] for row in rows]
        for row, words in zip(rows, said, strict=True):
            if row["step"] == loop + 1:
                console.print("     -- loop: repeats forever --", highlight=False)
            console.print(f"    {row['step']:>2} {words}", highlight=False)
        if loop == len(rows):
            console.print(
                "     -- loop: stays here forever (no fair step is enabled) --", highlight=False
            )
    bad = [p["name"] for p in data["properties"] if not p["matches"]]
    if bad:
        console.print(f"  [red]does not match [expect][/]: {', '.join(bad)}")
