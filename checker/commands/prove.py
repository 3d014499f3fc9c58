"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

A protocol that brings no strengthening (or ``--infer``) gets one inferred
(``model/infer.py``: template candidates, Houdini, then this same prover); ``--save`` writes
it as JSON and ``--strengthening FILE`` proves with a saved one.

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
        "--budget", type=float, default=120.0, help="seconds for inference (default 120)"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kvproof.checker.proof_report import render_proof
    from kvproof.checker.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff import build_handoff
    from kvproof.model.induction import prove
    from kvproof.spec.errors import KvproofInputError

    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    user = load_protocol(args.protocol) if args.protocol else None
    factory = user.factory if user else build_handoff
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.all:
        variants = [v for v in variants if not v.buggy]
    console = Console(stderr=args.json)
    out = []
    ok = True
    if args.save and len(variants) != 1:
        raise KvproofInputError("--save needs exactly one VARIANT", "--save")
    for variant in variants:
        protocol = factory(variant.switches)
        if args.strengthening:
            from dataclasses import replace

            from kvproof.model.infer import load

            protocol = replace(protocol, strengthening=load(args.strengthening, protocol))
        elif args.infer or not protocol.strengthening:
            ok = _infer(args, console, variant.name, protocol, out) and ok
            continue
        with console.status(f"proving {variant.name} ..."):
            result = prove(protocol, timeout_ms=args.timeout * 1000)
        ok = ok and result.proved
        data = {"variant": variant.name, **result.to_json()}
        out.append(data)
        if not args.json:
            render_proof(console, variant.name, result, cores=args.cores)
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    return 0 if ok else 1


def _infer(args: argparse.Namespace, console, name: str, protocol, out: list) -> bool:  # type: ignore[no-untyped-def]
    """``prove --infer``: infer the strengthening, then prove with it."""
    from kvproof.checker.proof_report import render_proof
    from kvproof.model.infer import infer, save

    with console.status(f"inferring an invariant for {name} ..."):
        result = infer(protocol, budget_s=args.budget, timeout_ms=args.timeout * 1000)
    proof = result.proof
    data = {"variant": name, **(proof.to_json() if proof else {"proved": False})}
    data["proved"] = result.proved
    data["summary"] = result.summary
    data["inferred"] = [{"text": c.text, **c.to_json()} for c in result.inferred]
    data["inference"] = result.to_json()
    out.append(data)
    if args.save and result.proved:
        save(args.save, protocol, result.inferred)
    if not args.json:
        color = "green" if result.proved else "red"
        console.print(f"[bold]{name}[/]: [{color}]{result.summary}[/]")
        if result.proved:
            console.print("  inferred invariant (with the safety invariants):")
            for c in result.inferred:
                console.print(f"    {c.text}", highlight=False, markup=False)
            if args.save:
                console.print(f"  saved to {args.save} (prove --strengthening {args.save})")
        elif proof is not None:
            render_proof(console, name, proof, cores=False)
    return result.proved
