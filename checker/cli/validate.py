"""Validate an engine's event log against the model: every event must be enabled.

``kvproof validate LOG --variant V``: LOG is JSON Lines (a ``{"kvproof_log": 1, ...}``
header, then ``{"event": ..., "rid": ..., "page": ...}`` per line), as the reference engine
writes it, or any engine that writes the same events. Reports the first event the model
does not enable (exit 1), and invariants every consistent model state violates (exit 1).
"""

from __future__ import annotations

import argparse
import json

from kvproof.checker.cli.consoles import console_for


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", help="engine event log (.jsonl)")
    parser.add_argument("--variant", help="the model's variant (default: the log's header)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:

    from kvproof.checker.conformance.validate import read_event_log, validate_log
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    log = read_event_log(args.log)
    name = args.variant or log.variant
    if not name:
        raise KvproofInputError("the log names no variant: pass --variant", args.log)
    report = validate_log(log, load_variant(name))
    bad = report.first_bad
    if args.json:
        print(
            json.dumps(
                {
                    "variant": report.variant,
                    "events": report.events,
                    "checked": report.checked,
                    "first_not_enabled": None
                    if bad is None
                    else {"line": bad.line, "event": str(bad.action), "model": report.context},
                    "violations": [{"line": n, "invariant": i} for n, i in report.violations],
                    "exit_code": report.exit_code,
                },
                indent=2,
            )
        )
        return report.exit_code
    console = console_for()
    console.print(
        f"{args.log}: {report.checked} of {report.events} events are steps of "
        f"[bold]{report.variant}[/]"
    )
    for line, inv in report.violations:
        console.print(f"[bold red]invariant {inv} violated[/] after the event on line {line}")
    if bad is not None:
        console.print(
            f"[bold red]NOT ENABLED[/] {args.log}:{bad.line}: {bad.action} is not an enabled "
            f"action of the model"
        )
        for line in report.context:
            console.print(f"  model: {line}")
    elif not report.violations:
        console.print("[green]the log is a run of the model[/]")
    return report.exit_code
