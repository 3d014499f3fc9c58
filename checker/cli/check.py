"""Bounded model checking of variants (and proofs): counterexamples as readable traces.

Exit codes: 0 every invariant holds to the depth (with --all: every verdict matches its
variant's declared expectation), 1 a violation (or a mismatch), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_float, positive_int
from kvproof.checker.cli.consoles import console_for
from kvproof.checker.distrib.options import add_ray_option


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
        metavar="NAME",
        help="check only this invariant (repeatable)",
    )
    proving = parser.add_mutually_exclusive_group()
    proving.add_argument(
        "--prove",
        action="store_true",
        help="also prove buggy variants (fixed ones are proved by default)",
    )
    proving.add_argument("--no-prove", action="store_true", help="BMC only, no unbounded proof")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="NAME",
        help="drop one of the variant's assumptions (repeatable): show what it hides",
    )
    parser.add_argument(
        "--no-necessity",
        action="store_true",
        help="do not test whether each assumption is needed (one extra check each)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
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


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.cli.selection import check_names, check_selection

    check_selection(args)
    check_names(args.variants, args.variants_dir, args.protocol, args.invariant or (), args.without)

    from kvproof.checker.cli.paths import check_input_dir, check_output_dir, check_output_file
    from kvproof.checker.cli.progress import progress_bar
    from kvproof.checker.cli.written import wrote
    from kvproof.checker.report import check_report
    from kvproof.checker.verify import checking
    from kvproof.checker.verify.check_pool import CheckJob, run_jobs
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants

    # Every output path is checked before minutes of work, not after.
    check_output_dir(args.out, "--out")
    check_output_file(args.junit, "--junit")
    check_output_file(args.sarif, "--sarif")
    check_input_dir(args.variants_dir, "--variants-dir")
    check_output_dir(args.html, "--html")
    user = load_protocol(args.protocol) if args.protocol else None
    factory = user.factory if user else None
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    if args.without:
        from kvproof.model.handoff.assumptions import active

        for variant in variants:
            active(variant, args.without)  # each must be one the variant lists
    console = console_for(stderr=args.json)
    prove = "never" if args.no_prove else ("always" if args.prove else "auto")
    jobs = [
        CheckJob(
            variant,
            args.requests,
            args.pages,
            args.depth if args.depth is not None else variant.bmc_depth,
            tuple(args.invariant) if args.invariant else None,
            prove,
            without=tuple(args.without),
            necessity=not args.no_necessity,
            protocol=args.protocol,
            depth_given=args.depth is not None,
        )
        for variant in variants
    ]
    workers = args.workers or max(1, min(os.cpu_count() or 1, len(jobs)))
    from kvproof.checker.distrib.options import executor_for

    ray = executor_for(args.ray, workers)
    try:
        with progress_bar(console, "checking variants", len(jobs)) as advance:
            checks = run_jobs(
                jobs,
                workers=workers,
                factory=factory,
                on_done=lambda c: advance(1),
                executor=ray,
            )
    finally:
        if ray is not None:
            ray.close()
    results = []
    complete_bad = mismatch = False
    for check in checks:
        data = checking.to_json(check)
        results.append(data)
        if not args.json and not args.all:
            check_report.render_check(console, check, data)
        if _complete(args, check, data, console):
            complete_bad = True
            # under --all a complete counterexample to an invariant expected to hold is a
            # mismatch like BMC's (a buggy variant's expected violation is not)
            broken = data["complete"].get("violated")
            mismatch = mismatch or check.variant.expect.get(broken) == "holds"
        files = []
        if args.out:
            files += write_traces(args.out, check)
        if args.html:
            files += write_html(args.html, check)
        if files:
            data["files"] = [str(f) for f in files]
            wrote(console, files)
    if args.all and not args.json:
        check_report.render_all(console, checks)
    if args.json:
        json.dump(results if (args.all or len(results) > 1) else results[0], sys.stdout, indent=2)
        print()
    if args.junit:
        from kvproof.checker.report.gate import write_junit

        write_junit(checks, args.junit, gate=args.all)
        wrote(console, [args.junit])
    if args.sarif:
        from kvproof.checker.report.gate import write_sarif

        write_sarif(checks, args.sarif)
        wrote(console, [args.sarif])
    if args.all:
        return 0 if all(c.all_match for c in checks) and not mismatch else 1
    return 1 if complete_bad or any(c.violated for c in checks) else 0


def _complete(args: argparse.Namespace, check, data: dict, console) -> bool:  # type: ignore[no-untyped-def]
    """The complete search, when asked for (``--complete``, a variant's ``complete = true``)
    or when the check would end on unknown (``completing.py``); True on a violation."""
    from kvproof.checker.verify import checking
    from kvproof.checker.verify.completing import FALLBACK_BUDGET_S, reason_for, run_complete

    reason = reason_for(check, args.complete)
    if reason is None:
        return False
    budget = args.budget or (FALLBACK_BUDGET_S if reason == "fallback" else 120.0)
    with console.status(f"complete check of {check.variant.name} ..."):
        done = run_complete(
            check,
            {"Req": args.requests, "Page": args.pages},
            reason,
            budget_s=budget,
            protocol_spec=args.protocol,
        )
    data["complete"] = done.to_json()
    if done.result.trace is not None:
        data["complete"]["trace"] = checking.trace_rows(check.protocol, done.result.trace)
    if not args.json:
        console.print(f"[bold]{check.variant.name}[/] complete: {done.summary}", highlight=False)
        for row in data["complete"].get("trace", []):
            console.print(f"  {row['step']:>2} {row['label']}", highlight=False)
    return done.result.verdict == "violated"


def write_traces(out: Path, check) -> list[Path]:  # type: ignore[no-untyped-def]
    """Each counterexample as ``.jsonl`` and ``.itf.json``; returns the files written."""
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in check.bmc.results:
        if r.trace is None:
            continue
        stem = out / f"{check.variant.name}.{r.invariant}"
        write_jsonl(r.trace, Path(f"{stem}.jsonl"), protocol=check.protocol)
        write_itf(r.trace, Path(f"{stem}.itf.json"), check.protocol)
        files += [Path(f"{stem}.jsonl"), Path(f"{stem}.itf.json")]
    return files


def write_html(out: Path, check) -> list[Path]:  # type: ignore[no-untyped-def]
    """One report per violated invariant (model side: ``check`` never runs the engine)."""
    from kvproof.checker.report.html_page import trace_page, write

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in check.bmc.results:
        if r.trace is None:
            continue
        path = out / f"{check.variant.name}.{r.invariant}.html"
        write(path, trace_page(r.trace, check.protocol, variant=check.variant))
        files.append(path)
    return files
