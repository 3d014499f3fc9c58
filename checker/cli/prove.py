"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

Exit codes: 0 proved, 1 not proved (a counterexample to induction is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kvproof.checker.cli.argtypes import positive_int


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
    parser.add_argument("--protocol", help="user protocol factory 'module:attr'")
    parser.add_argument("--variants-dir", type=Path, help="folder of variant TOMLs")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kvproof.checker.cli.paths import check_input_dir
    from kvproof.checker.report.proof_report import render_proof
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff import build_handoff
    from kvproof.model.induction import prove
    from kvproof.spec.errors import KvproofInputError

    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if args.variants and args.all:
        raise KvproofInputError("name VARIANTs or --all, not both", "--all")
    check_input_dir(args.variants_dir, "--variants-dir")
    user = load_protocol(args.protocol) if args.protocol else None
    factory = user.factory if user else build_handoff
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.all:
        variants = [v for v in variants if not v.buggy]
        if not variants:
            raise KvproofInputError("no fixed variant to prove", str(args.variants_dir or "--all"))
    console = Console(stderr=args.json)
    out = []
    ok = True
    for variant in variants:
        with console.status(f"proving {variant.name} ..."):
            result = prove(factory(variant.switches), timeout_ms=args.timeout * 1000)
        ok = ok and result.proved
        data = {"variant": variant.name, **result.to_json()}
        out.append(data)
        if not args.json:
            render_proof(console, variant.name, result, cores=args.cores)
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    return 0 if ok else 1
