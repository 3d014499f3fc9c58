"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

Exit codes: 0 proved, 1 not proved (a counterexample to induction is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvproof.checker.cli.argtypes import positive_float, positive_int, same_names
from kvproof.checker.cli.consoles import add_quiet_option, for_run
from kvproof.checker.cli.paths import check_names, check_output_file
from kvproof.checker.distrib.executor import add_ray_option


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variants", nargs="*", metavar="VARIANT", help="name or .toml path")
    parser.add_argument("--all", action="store_true", help="every fixed variant")
    parser.add_argument(
        "--cores", action="store_true", help="show which conjuncts each step needed"
    )
    parser.add_argument(
        "--timeout", type=positive_int, default=60, help="seconds per solver query (60)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--html", metavar="OUT.html", help="write the proof (or the CTI) as an HTML report"
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="NAME",
        help="drop one of the variant's assumptions (repeatable)",
    )
    parser.add_argument("--protocol", help="user protocol factory 'module:attr'")
    parser.add_argument("--variants-dir", type=Path, help="folder of variant TOMLs")
    parser.add_argument(
        "--infer",
        action="store_true",
        help="infer the strengthening (default when the protocol brings none)",
    )
    parser.add_argument("--save", type=Path, help="with --infer: write the invariant (JSON)")
    parser.add_argument(
        "--strengthening", type=Path, help="prove with a saved strengthening (from --save)"
    )
    parser.add_argument(
        "--budget", type=positive_float, default=120.0, help="seconds for inference (120)"
    )
    # Ranges are checked by the library (model/search/candidates.py's Templates): exit 2 there.
    parser.add_argument(
        "--infer-literals",
        type=positive_int,
        metavar="K",
        help="with --infer: literals per candidate clause (default 4)",
    )
    parser.add_argument(
        "--infer-vars",
        type=positive_int,
        metavar="N",
        help="with --infer: quantified variables per sort (default 2)",
    )
    add_ray_option(parser)
    add_quiet_option(parser)


def run(args: argparse.Namespace) -> int:
    check_names(args.variants, args.variants_dir, args.protocol, every=args.all)

    from kvproof.checker.runs.prove_run import ProveOptions, prove_variants

    html = check_output_file(args.html, "--html")
    console, progress = for_run(args)
    done = prove_variants(
        args.variants,
        every=args.all,
        variants_dir=args.variants_dir,
        options=ProveOptions(**same_names(ProveOptions, args, html=html)),
        progress=progress,
    )
    from kvproof.checker.render.prove import render  # loads Z3: after the names are checked

    render(console, done, as_json=args.json, cores=args.cores)
    return done.exit_code
