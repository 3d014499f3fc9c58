"""``kvproof check --liveness``: the liveness half of ``check`` (issue #29).

Parses nothing: ``check.py`` hands over its arguments and the resolved variants; one
library call per variant (``checker/verify/liveness.py``), then one renderer. Exit codes as
``check``: 0 every property holds (with ``--all``: every verdict matches ``[expect]``),
1 a fair lasso (or a mismatch), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kvproof.checker.verify.liveness import LivenessCheck, check_liveness, to_json
from kvproof.spec.errors import KvproofInputError


def split_names(names: list[str] | None, protocol: Any = None) -> tuple[list[str], list[str]]:
    """``--invariant`` names: (safety invariants, liveness properties)."""
    from kvproof.spec.liveness import LIVENESS

    lively = set(LIVENESS) if protocol is None else {p.name for p in protocol.liveness}
    names = names or []
    return [n for n in names if n not in lively], [n for n in names if n in lively]


def run_liveness(
    args: argparse.Namespace, variants: list[Any], factory: Any, names: list[str]
) -> int:
    from kvproof.checker.cli.consoles import console_for

    console = console_for(stderr=args.json)
    results = []
    checks = []
    for variant in variants:
        with console.status(f"liveness of {variant.name} ..."):
            check = check_liveness(
                variant,
                names=tuple(names) or None,
                without=tuple(args.without),
                factory=factory,
                necessity=not args.no_necessity,
            )
        checks.append(check)
        data = liveness_json(check)
        results.append({"variant": variant.name, "liveness": data})
        if not args.json:
            render(console, check, data)
    if args.json:
        json.dump(results if len(results) > 1 else results[0], sys.stdout, indent=2)
        print()
    if args.all:
        return 0 if all(c.all_match for c in checks) else 1
    return 1 if any(c.violated for c in checks) else 0


def liveness_json(check: LivenessCheck) -> dict[str, Any]:
    from kvproof.checker.verify.checking import trace_rows

    return to_json(check, trace_rows)


def expectations(variants: list[Any], factory: Any, console: Any, quiet: bool) -> dict:
    """``check --all``: each variant's ``[expect]`` liveness keys, checked. Returns
    variant name -> its ``"liveness"`` JSON (variants without liveness keys are skipped)."""
    out = {}
    for variant in variants:
        if not variant.expect_liveness:
            continue
        check = check_liveness(variant, factory=factory, necessity=False)
        out[variant.name] = liveness_json(check)
    if not quiet and out:
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
    return out


def render(console: Any, check: LivenessCheck, data: dict[str, Any]) -> None:
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
        for row in p["trace"]:
            if row["step"] == loop + 1:
                console.print("     -- loop: repeats forever --", highlight=False)
            console.print(f"    {row['step']:>2} {row['label']}", highlight=False)
        if loop == len(p["trace"]):
            console.print(
                "     -- loop: stays here forever (no fair step is enabled) --", highlight=False
            )
    bad = [p["name"] for p in data["properties"] if not p["matches"]]
    if bad:
        console.print(f"  [red]does not match [expect][/]: {', '.join(bad)}")


def check_mixed(safety: list[str], live: list[str], liveness_flag: bool) -> None:
    if live and safety:
        raise KvproofInputError(
            f"--invariant names safety invariants ({', '.join(safety)}) and liveness"
            f" properties ({', '.join(live)}): check them in two runs",
            "--invariant",
        )
    if liveness_flag and safety:
        raise KvproofInputError(
            f"--liveness checks liveness properties only, not {', '.join(safety)}",
            "--invariant",
        )
