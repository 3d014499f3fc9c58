"""Probe an OpenAI-compatible endpoint for cross-tenant KV leaks (black box).

``kvproof probe URL [--api-key K --second-key K2] [--context N]``: plants canaries from one
tenant, sends prompts from another around the acceptance boundary, and reports foreign
canaries, 200s that should be 400s, answers faster than their prefill, and inconsistent
answers. Exit 0 when clean; 1 on any finding, or when the budget ran out before the probe
was done (verdict ``inconclusive``: never reported as clean); 2 for an unreachable or
non-OpenAI URL.
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.argtypes import int_at_least, positive_float, positive_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--api-key",
        default="kvproof-probe-tenant-a",
        help="tenant A's key (plants canaries); never printed",
    )
    parser.add_argument(
        "--second-key",
        default="kvproof-probe-tenant-b",
        help="tenant B's key (probes); never printed",
    )
    parser.add_argument(
        "--context",
        type=int_at_least(128),
        default=None,
        help="advertised context in tokens, >= 128 (default: from /v1/models)",
    )
    parser.add_argument("--max-requests", type=positive_int, default=120, help="request budget")
    parser.add_argument("--max-seconds", type=positive_float, default=90.0, help="time budget")
    parser.add_argument(
        "--timeout", type=positive_float, default=30.0, help="per-request timeout (s, > 0)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.cli.consoles import console_for, emit
    from kvproof.checker.report.tables import print_table
    from kvproof.ops.probe import Budget, run_probe
    from kvproof.ops.probe.render import render
    from kvproof.spec.errors import KvproofInputError

    if not args.url.startswith(("http://", "https://")):
        raise KvproofInputError("URL must start with http:// or https://", args.url)
    if args.api_key == args.second_key:
        raise KvproofInputError("the two keys must differ (two tenants)", "--second-key")
    report = run_probe(
        args.url,
        api_key=args.api_key,
        second_key=args.second_key,
        context=args.context,
        budget=Budget(args.max_requests, args.max_seconds),
        timeout_s=args.timeout,
    )
    return emit(report, args.json, lambda: render(report, console_for(), print_table))
