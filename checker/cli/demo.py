"""Replay the incident on the reference engine: canaries, a too-long prompt, a LEAK report.

``kvproof demo incident [--variant V]``: tenants A and B send prompts holding canaries, then
A sends a prompt longer than prefill's pool but within the advertised context (the
incident's deployment, scaled down with the same ratio). The clients see a LEAK (another
tenant's canary in a 200), a WRONG ANSWER (tokens unlike the single-node engine's, no
foreign canary) or nothing wrong. Exit 0 when that is what the variant predicts (its
``demo`` key: the leak on 0.5.19, a clean run on 0.5.22), 1 when it is not; with
``--expect clean`` any leak or wrong answer is a finding (exit 1).
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.argtypes import same_names
from kvproof.checker.cli.consoles import console_for, emit


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", choices=["incident"], help="the scenario to replay")
    parser.add_argument(
        "--variant",
        default="sglang-0.5.19-pd",
        help="engine version: a variant name, .toml path or release (sglang==0.5.20)",
    )
    parser.add_argument(
        "--own-sizes",
        action="store_true",
        help="use the variant's own engine_sizes instead of the incident's deployment",
    )
    parser.add_argument(
        "--model",
        choices=["echo", "tiny"],
        default="echo",
        help="echo (answers the text in the KV it reads: a leak reads as another tenant's"
        " text) or tiny (a small random transformer)",
    )
    parser.add_argument("--device", default="cpu", help="cpu (torch kernels) or cuda (Triton)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the engine (model weights and scheduler)"
    )
    parser.add_argument(
        "--expect",
        choices=["variant", "clean"],
        default="variant",
        help="variant (default): exit 0 when the run shows what the variant predicts (the leak"
        " on sglang-0.5.19-pd); clean: exit 1 on any leak or wrong answer",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.demo import render
    from kvproof.checker.runs.demo_run import demo
    from kvproof.spec.by_release import say_release

    say_release([args.variant])
    done = demo(args.variant, **same_names(demo, args))
    return emit(
        done,
        args.json,
        lambda: render(console_for(), done.report, expected=done.expected, outcome=done.outcome),
    )
