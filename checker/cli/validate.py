"""Validate an engine's event log against the model: every event must be enabled.

``kvproof validate LOG --variant V``: LOG is JSON Lines (a ``{"kvproof_log": 1, ...}``
header, then ``{"event": ..., "rid": ..., "page": ...}`` per line), as the reference engine
writes it, or any engine that writes the same events. Reports the first event the model
does not enable (exit 1), and invariants every consistent model state violates (exit 1).
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.consoles import console_for, emit


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", help="engine event log (.jsonl)")
    parser.add_argument("--variant", help="the model's variant (default: the log's header)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.validate import render
    from kvproof.checker.runs.validate_run import validate

    done = validate(args.log, args.variant)
    return emit(done, args.json, lambda: render(console_for(), done))
