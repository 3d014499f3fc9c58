"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

Exit codes: 0 proved, 1 not proved (a counterexample to induction is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from kvproof.checker.cli.argtypes import positive_int
from kvproof.checker.distrib.options import add_ray_option


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
    add_ray_option(parser)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kvproof.checker.cli.paths import check_input_dir, check_output_file
    from kvproof.checker.report.check_report import render_assumptions
    from kvproof.checker.report.proof_report import render_proof
    from kvproof.checker.verify.checking import assumptions_json, protocol_for
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.assumptions import active
    from kvproof.model.induction import prove
    from kvproof.spec.errors import KvproofInputError

    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if args.variants and args.all:
        raise KvproofInputError("name VARIANTs or --all, not both", "--all")
    check_input_dir(args.variants_dir, "--variants-dir")
    check_output_file(args.html, "--html")
    user = load_protocol(args.protocol) if args.protocol else None
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.all:
        variants = [v for v in variants if not v.buggy]
        if not variants:
            raise KvproofInputError("no fixed variant to prove", str(args.variants_dir or "--all"))
    console = Console(stderr=args.json)
    out = []
    ok = True
    pages = []
    without = tuple(args.without)
    for variant in variants:
        active(variant, without)  # each dropped one must be listed by the variant
    factory = user.factory if user else None
    timeout_ms = args.timeout * 1000
    results = None
    if args.ray is not None:
        if without:
            raise KvproofInputError("--without runs locally: drop --ray", "--without")
        results = _on_ray(args, variants, factory, console)
    for i, variant in enumerate(variants):
        protocol = protocol_for(variant, factory, without)
        if results is not None:
            result = results[i]
        else:
            with console.status(f"proving {variant.name} ..."):
                result = prove(protocol, timeout_ms=timeout_ms)
        found = () if user else _necessity(variant, without, result.proved, timeout_ms)
        pages.append((variant, protocol, result))
        ok = ok and result.proved
        data = {
            "variant": variant.name,
            **result.to_json(),
            "assumptions": assumptions_json(variant, without, found),
            "without": list(without),
        }
        out.append(data)
        if not args.json:
            render_proof(console, variant.name, result, cores=args.cores)
            render_assumptions(console, data["assumptions"])
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    if args.html:
        from kvproof.checker.report.html_page import proof_page

        Path(args.html).write_text(proof_page(pages), encoding="utf-8")
        if not args.json:
            console.print(f"report: {args.html}")
    return 0 if ok else 1


def _necessity(variant, without, proved, timeout_ms):  # type: ignore[no-untyped-def]
    """For a proof, an assumption is needed when the proof fails without it (the proof
    alone cannot show a counterexample exists: ``kvproof check --without`` does)."""
    from kvproof.checker.verify.necessity import Necessity
    from kvproof.model.assumptions import handoff_for
    from kvproof.model.induction import prove

    if not proved:
        return ()
    out = []
    for name in variant.assume:
        if name in without:
            continue
        again = prove(handoff_for(variant, (*without, name)), timeout_ms=timeout_ms)
        if again.proved:
            out.append(Necessity(name, False, "unnecessary: the proof goes through without it"))
        else:
            out.append(Necessity(name, True, f"needed by the proof: without it {again.summary}"))
    return tuple(out)


def _on_ray(args, variants, factory, console):  # type: ignore[no-untyped-def]
    """Every variant's proof as one Ray task; results in variant order."""
    from kvproof.checker.distrib.options import executor_for
    from kvproof.checker.verify.prove_pool import prove_variants

    with (
        executor_for(args.ray, min(os.cpu_count() or 1, len(variants) or 1)) as ray,
        console.status(f"proving {len(variants)} variants on Ray ..."),
    ):
        return prove_variants(
            variants, ray, protocol=args.protocol, factory=factory, timeout_ms=args.timeout * 1000
        )
