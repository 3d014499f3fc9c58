"""Prove isolation for all numbers of requests and pages (inductive invariants, Z3).

Exit codes: 0 proved, 1 not proved (a counterexample to induction is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from kvproof.checker.cli.argtypes import positive_float, positive_int
from kvproof.checker.cli.consoles import console_for
from kvproof.checker.cli.progress import add_quiet_option
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
    from kvproof.checker.cli.selection import check_names, check_selection

    check_selection(args)
    check_names(args.variants, args.variants_dir, args.protocol, without=args.without)

    from kvproof.checker.cli.paths import check_input_dir, check_output_file
    from kvproof.checker.cli.progress import heartbeat_s, progress_for
    from kvproof.checker.cli.written import wrote
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff.assumptions import active
    from kvproof.spec.errors import KvproofInputError

    templates = _templates(args)
    check_input_dir(args.variants_dir, "--variants-dir")
    check_output_file(args.html, "--html")
    heartbeat_s()  # a bad KVPROOF_HEARTBEAT_S is exit 2 before any work
    user = load_protocol(args.protocol) if args.protocol else None
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.all:
        variants = [v for v in variants if not v.buggy]
        if not variants:
            raise KvproofInputError("no fixed variant to prove", str(args.variants_dir or "--all"))
    console = console_for(stderr=args.json)
    out: list = []
    pages: list = []
    without = tuple(args.without)
    for variant in variants:
        active(variant, without)  # each dropped one must be listed by the variant
    factory = user.factory if user else None
    results = None
    if args.ray is not None and without:
        raise KvproofInputError("--without runs locally: drop --ray", "--without")
    if args.save and len(variants) != 1:
        raise KvproofInputError("--save needs exactly one VARIANT", "--save")
    with progress_for("proving", len(variants), quiet=args.quiet, console=console) as progress:
        if args.ray is not None:
            results = _on_ray(args, variants, factory, progress)
        ok = _prove_each(args, variants, results, user, templates, console, progress, out, pages)
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
    if args.html:
        from kvproof.checker.report.html_page import proof_page, write

        write(Path(args.html), proof_page(pages))
        wrote(console, [args.html])  # stderr under --json
    return 0 if ok else 1


def _prove_each(args, variants, results, user, templates, console, progress, out, pages) -> bool:  # type: ignore[no-untyped-def]
    """Each variant's proof (or the one Ray gave), its assumptions' necessity, its render;
    ``out`` and ``pages`` gather the JSON and the HTML pages. True when all are proved."""
    from kvproof.checker.report.check_report import render_assumptions
    from kvproof.checker.report.proof_report import render_proof
    from kvproof.checker.verify.checking import assumptions_json, protocol_for
    from kvproof.model.search.induction import prove

    ok = True
    without = tuple(args.without)
    factory = user.factory if user else None
    timeout_ms = args.timeout * 1000
    for i, variant in enumerate(variants):
        protocol = protocol_for(variant, factory, without)
        if args.strengthening:
            from dataclasses import replace

            from kvproof.model.search.infer import load

            protocol = replace(protocol, strengthening=load(args.strengthening, protocol))
        elif results is None and (args.infer or not protocol.strengthening):
            ok = _infer(args, console, variant.name, protocol, out, templates, progress) and ok
            continue
        if results is not None and not args.strengthening:
            result = results[i]
        else:
            progress.stage(variant.name, "proof")
            result = prove(protocol, timeout_ms=timeout_ms)
        found = () if user else _necessity(variant, without, result, timeout_ms, progress)
        progress.done(variant.name, "proved" if result.proved else "NOT proved")
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
    return ok


def _necessity(variant, without, result, timeout_ms, progress):  # type: ignore[no-untyped-def]
    """For a proof, an assumption is needed when the proof fails without it (the proof
    alone cannot show a counterexample exists: ``kvproof check --without`` does)."""
    from kvproof.checker.verify.necessity import Necessity
    from kvproof.model.handoff.assumptions import handoff_for
    from kvproof.model.search.induction import prove

    if not result.proved:
        return ()
    out = []
    for name in variant.assume:
        if name in without:
            continue
        progress.stage(variant.name, "necessity", name)
        again = prove(handoff_for(variant, (*without, name)), timeout_ms=timeout_ms)
        if again.proved:
            out.append(Necessity(name, False, "unnecessary: the proof goes through without it"))
        else:
            out.append(Necessity(name, True, f"needed by the proof: without it {again.summary}"))
    return tuple(out)


def _on_ray(args, variants, factory, progress):  # type: ignore[no-untyped-def]
    """Every variant's proof as one Ray task; results in variant order. A proof is one
    solver call with no stages inside, so progress hears of each as its result arrives."""
    from kvproof.checker.distrib.options import executor_for
    from kvproof.checker.verify.prove_pool import prove_variants

    for v in variants:
        progress.stage(v.name, "ray", "proving")

    def arrived(v, result) -> None:  # type: ignore[no-untyped-def]
        progress.stage(v.name, "ray", "proved" if result.proved else "NOT proved")

    with executor_for(args.ray, min(os.cpu_count() or 1, len(variants) or 1)) as ray:
        return prove_variants(
            variants,
            ray,
            protocol=args.protocol,
            factory=factory,
            timeout_ms=args.timeout * 1000,
            on_done=arrived,
        )


def _templates(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The inference templates, checked before any work (bad sizes: exit 2)."""
    from kvproof.model.search.candidates import Templates
    from kvproof.spec.errors import KvproofInputError

    if (args.infer_literals or args.infer_vars) and args.strengthening:
        raise KvproofInputError(
            "--infer-literals/--infer-vars tune inference: drop them with --strengthening",
            "--strengthening",
        )
    return Templates.sized(args.infer_literals, args.infer_vars)


def _infer(
    args: argparse.Namespace, console, name: str, protocol, out: list, templates, progress
) -> bool:  # type: ignore[no-untyped-def]
    """``prove --infer``: infer the strengthening (``model/search/infer.py``), then prove."""
    from kvproof.checker.report.proof_report import render_proof
    from kvproof.model.search.infer import infer, save

    progress.stage(name, "inference")
    result = infer(
        protocol, templates=templates, budget_s=args.budget, timeout_ms=args.timeout * 1000
    )
    progress.done(name, result.summary)
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
        else:
            _render_cti(console, result.cti)
            if proof is not None:
                render_proof(console, name, proof, cores=False)
    return result.proved


def _render_cti(console, cti) -> None:  # type: ignore[no-untyped-def]
    """Inference's counterexample: its pre-state satisfies every surviving candidate."""
    if not cti:
        return
    where = ", ".join(f"{n} {s}" for s, n in cti["sizes"].items())
    console.print(
        f"  {cti['conjunct']} broken by {cti['action']} from a state that satisfies every "
        f"surviving candidate ({where}):",
        highlight=False,
    )
    for line in cti["pre"]:
        console.print(f"    pre  {line}", highlight=False, markup=False)
    for line in cti["changes"]:
        console.print(f"    then {line}", highlight=False, markup=False)
