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


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variants", nargs="*", metavar="VARIANT", help="name or .toml path")
    parser.add_argument("--all", action="store_true", help="every variant in spec/variants")
    parser.add_argument(
        "--depth", type=int, help="BMC depth (default: the variant's bmc_depth, 12 if unset)"
    )
    parser.add_argument("--requests", type=int, default=3, help="requests (default 3)")
    parser.add_argument("--pages", type=int, default=6, help="decode pages (default 6)")
    parser.add_argument(
        "--invariant",
        action="append",
        metavar="NAME",
        help="check only this invariant (repeatable)",
    )
    parser.add_argument(
        "--prove",
        action="store_true",
        help="also prove buggy variants (fixed ones are proved by default)",
    )
    parser.add_argument("--no-prove", action="store_true", help="BMC only, no unbounded proof")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--out", type=Path, help="write traces (.jsonl and .itf.json) here")
    parser.add_argument("--junit", type=Path, help="write a JUnit XML report")
    parser.add_argument("--sarif", type=Path, help="write a SARIF report")
    parser.add_argument("--protocol", help="user protocol factory 'module:attr' (see README)")
    parser.add_argument(
        "--workers", type=int, help="processes for several variants (default: one per core)"
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
        "--budget", type=float, default=120.0, help="seconds for --complete (default 120)"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from kvproof.checker import check_report, checking
    from kvproof.checker.check_pool import CheckJob, run_jobs
    from kvproof.checker.protocols import load_protocol, resolve_variants
    from kvproof.spec.errors import KvproofInputError

    if (args.depth is not None and args.depth < 0) or args.requests < 1 or args.pages < 1:
        raise KvproofInputError("--depth must be >= 0, --requests and --pages >= 1")
    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    user = load_protocol(args.protocol) if args.protocol else None
    factory = user.factory if user else None
    variants = resolve_variants(args.variants, args.all, args.variants_dir, user)
    console = Console(stderr=args.json)
    prove = "never" if args.no_prove else ("always" if args.prove else "auto")
    jobs = [
        CheckJob(
            variant,
            args.requests,
            args.pages,
            args.depth if args.depth is not None else variant.bmc_depth,
            tuple(args.invariant) if args.invariant else None,
            prove,
        )
        for variant in variants
    ]
    workers = args.workers if args.workers is not None else min(os.cpu_count() or 1, len(jobs))
    if workers < 1:
        raise KvproofInputError("must be at least 1", "--workers")
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("checking variants", total=len(jobs))
        checks = run_jobs(
            jobs, workers=workers, factory=factory, on_done=lambda c: progress.advance(task)
        )
    results = []
    complete_bad = False
    for check in checks:
        data = checking.to_json(check)
        results.append(data)
        if not args.json and not args.all:
            check_report.render_check(console, check, data)
        if args.complete:
            from kvproof.model.complete import check_complete

            with console.status(f"complete check of {check.variant.name} ..."):
                done = check_complete(
                    check.protocol,
                    {"Req": args.requests, "Page": args.pages},
                    budget_s=args.budget,
                    variant=check.variant.name,
                )
            data["complete"] = done.to_json()
            if done.trace is not None:
                data["complete"]["trace"] = checking.trace_rows(check.protocol, done.trace)
            complete_bad = complete_bad or done.verdict == "violated"
            if not args.json:
                console.print(f"[bold]{check.variant.name}[/] complete: {done.summary}")
                if done.trace is not None:
                    for row in data["complete"]["trace"]:
                        console.print(f"  {row['step']:>2} {row['label']}", highlight=False)
        if args.out:
            write_traces(args.out, check)
    if args.all and not args.json:
        check_report.render_all(console, checks)
    if args.json:
        json.dump(results if (args.all or len(results) > 1) else results[0], sys.stdout, indent=2)
        print()
    if args.junit:
        from kvproof.checker.gate import write_junit

        write_junit(checks, args.junit)
    if args.sarif:
        from kvproof.checker.gate import write_sarif

        write_sarif(checks, args.sarif)
    if args.all:
        return 0 if all(c.all_match for c in checks) else 1
    return 1 if complete_bad or any(c.violated for c in checks) else 0


def write_traces(out: Path, check) -> None:  # type: ignore[no-untyped-def]
    from kvproof.checker.itf import write_itf
    from kvproof.checker.tracefile import write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    for r in check.bmc.results:
        if r.trace is None:
            continue
        stem = out / f"{check.variant.name}.{r.invariant}"
        write_jsonl(r.trace, Path(f"{stem}.jsonl"), protocol=check.protocol)
        write_itf(r.trace, Path(f"{stem}.itf.json"), check.protocol)
