"""Audit a deployment's logs, /server_info and /metrics for the incident's preconditions.

Reads SGLang and vLLM startup logs, SGLang /server_info JSON and vLLM /metrics text (the
format is detected per file), or one deployment TOML naming the files per node. Solves the
danger window (prompt lengths the API accepts, prefill rejects and decode admits) with Z3.
Exit 0 clean, 1 a finding at or above --fail-on, 2 unreadable input.
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.consoles import console_for, emit

SEVERITIES = ("info", "low", "medium", "high", "critical", "never")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="node files (one node each) or one deployment .toml",
    )
    parser.add_argument(
        "--role",
        action="append",
        default=[],
        metavar="NODE=ROLE",
        help="set a node's role (prefill, decode, single); NODE is a node "
        "name, a path or a file name; repeatable",
    )
    parser.add_argument(
        "--context",
        type=int,
        metavar="TOKENS",
        help="the context length the API advertises (default: the TOML's "
        "advertised_context, else the largest node context)",
    )
    parser.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        default="low",
        help="exit 1 if a finding is at or above this severity (default: low)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from kvproof.ops.audit.render import render
    from kvproof.ops.audit.run import audit_deployment

    done = audit_deployment(args.paths, args.role, context=args.context, fail_on=args.fail_on)
    return emit(done, args.json, lambda: render(done, console_for()))
