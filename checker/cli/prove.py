"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

Exit codes: 0 proved, 1 not proved (a counterexample to induction is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variants", nargs="*", metavar="VARIANT", help="name or .toml path")
    parser.add_argument("--all", action="store_true", help="every fixed variant")
    parser.add_argument(
        "--cores", action="store_true", help="show which conjuncts each step needed"
    )
    parser.add_argument("--timeout", type=int, default=60, help="seconds per solver query")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--html", metavar="OUT.html", help="write the proof (or the CTI) as an HTML report"
    )
    parser.add_argument("--protocol", help="user protocol factory 'module:attr'")
    parser.add_argument("--variants-dir", type=Path, help="folder of variant TOMLs")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kvproof.checker.report.proof_report import render_proof
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff import build_handoff
    from kvproof.model.induction import prove
    from kvproof.spec.errors import KvproofInputError

    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if args.html:
        from kvproof.checker.cli.html_out import check_file

        check_file(args.html)
    user = load_protocol(args.protocol) if args.protocol else None
    factory = user.factory if user else build_handoff
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.all:
        variants = [v for v in variants if not v.buggy]
    console = Console(stderr=args.json)
    out = []
    ok = True
    pages = []
    for variant in variants:
        protocol = factory(variant.switches)
        with console.status(f"proving {variant.name} ..."):
            result = prove(protocol, timeout_ms=args.timeout * 1000)
        pages.append((variant, protocol, result))
        ok = ok and result.proved
        data = {"variant": variant.name, **result.to_json()}
        out.append(data)
        if not args.json:
            render_proof(console, variant.name, result, cores=args.cores)
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    if args.html:
        from kvproof.checker.report.html_page import proof_page

        Path(args.html).write_text(proof_page(pages), encoding="utf-8")
        if not args.json:
            console.print(f"report: {args.html}")
    return 0 if ok else 1
