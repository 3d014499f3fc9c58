"""Bounded model checking of variants (and proofs): counterexamples as readable traces.

Exit codes: 0 every invariant holds to the depth (with --all: every verdict matches its
variant's declared expectation), 1 a violation (or a mismatch), 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_float, positive_int, same_names
from kvproof.checker.cli.consoles import add_quiet_option, for_run
from kvproof.checker.cli.paths import check_names, check_output_dir, check_output_file
from kvproof.checker.distrib.executor import add_ray_option


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variants", nargs="*", metavar="VARIANT", help="name or .toml path")
    parser.add_argument("--all", action="store_true", help="every variant in spec/variants")
    parser.add_argument(
        "--depth",
        type=int_at_least(1, 64),
        help="BMC depth 1..64 (default: the variant's bmc_depth, 12 if unset)",
    )
    parser.add_argument("--requests", type=positive_int, default=3, help="requests (default 3)")
    parser.add_argument("--pages", type=positive_int, default=6, help="decode pages (default 6)")
    parser.add_argument(
        "--invariant",
        action="append",
        dest="invariants",
        metavar="NAME",
        help="check only this invariant or liveness property (repeatable)",
    )
    from kvproof.spec.liveness import LIVENESS

    parser.add_argument(
        "--liveness",
        action="store_true",
        help="check only the liveness properties ("
        + ", ".join(LIVENESS)
        + "): fair lassos, complete at 2 requests and 1 page",
    )
    proving = parser.add_mutually_exclusive_group()
    proving.add_argument(
        "--prove",
        action="store_const",
        const="always",
        default="auto",
        help="also prove buggy variants (fixed ones are proved by default)",
    )
    proving.add_argument(
        "--no-prove",
        action="store_const",
        const="never",
        dest="prove",
        help="BMC only, no unbounded proof",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="NAME",
        help="drop one of the variant's assumptions (repeatable): show what it hides",
    )
    parser.add_argument(
        "--no-necessity",
        action="store_false",
        dest="necessity",
        help="do not test whether each assumption is needed (one extra check each)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--raw", action="store_true", help="steps as the model's cells")
    parser.add_argument("--out", type=Path, help="write traces (.jsonl and .itf.json) here")
    parser.add_argument(
        "--html", type=Path, metavar="DIR", help="an HTML report per violated invariant here"
    )
    parser.add_argument("--junit", type=Path, help="write a JUnit XML report")
    parser.add_argument("--sarif", type=Path, help="write a SARIF report")
    parser.add_argument("--protocol", help="user protocol factory 'module:attr' (see README)")
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="processes for several variants (default: one per core)",
    )
    parser.add_argument(
        "--variants-dir", type=Path, help="folder of variant TOMLs (default: kvproof's)"
    )
    parser.add_argument(
        "--complete",
        action="store_true",
        help="also check every depth at --requests/--pages (no bound; see README)",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        help="seconds for --complete (120; 30 for the search check runs itself when BMC "
        "finds nothing and the proof fails)",
    )
    add_ray_option(parser)
    add_quiet_option(parser)


def run(args: argparse.Namespace) -> int:
    check_names(args.variants, args.variants_dir, args.protocol, args.invariants or (), args.all)

    from kvproof.checker.runs.check_run import CheckOptions, check

    # Every output path is checked before minutes of work, not after.
    check_output_dir(args.out, "--out")
    check_output_file(args.junit, "--junit")
    check_output_file(args.sarif, "--sarif")
    check_output_dir(args.html, "--html")
    console, progress = for_run(args)
    options = CheckOptions(**same_names(CheckOptions, args))
    done = check(
        args.variants,
        every=args.all,
        variants_dir=args.variants_dir,
        options=options,
        progress=progress,
    )
    # The renderer loads Z3 (it explains traces): a mistyped name is exit 2 before that.
    from kvproof.checker.render.check import render

    render(console, done, as_json=args.json, raw=args.raw)
    return done.exit_code
