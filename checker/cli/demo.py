"""Replay the incident on the reference engine: canaries, a too-long prompt, a LEAK report.

``kvproof demo incident [--variant V]``: tenants A and B send prompts holding canaries, then
A sends a prompt longer than prefill's pool but within the advertised context (the
incident's deployment, scaled down with the same ratio). Exit 1 when a 200 is wrong: a
LEAK (another tenant's canary in it) or a WRONG ANSWER (tokens unlike the single-node
engine's, no foreign canary), else 0.
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.consoles import console_for


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", choices=["incident"], help="the scenario to replay")
    parser.add_argument(
        "--variant", default="sglang-0.5.19-pd", help="engine version (name or .toml path)"
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
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.runs.demo_run import demo

    done = demo(
        args.variant,
        own_sizes=args.own_sizes,
        model=args.model,
        device=args.device,
        seed=args.seed,
    )
    if args.json:
        import json

        print(json.dumps(done.to_json(), indent=2))
    else:
        from kvproof.checker.render.demo import render

        render(console_for(), done.report)
    return done.exit_code
