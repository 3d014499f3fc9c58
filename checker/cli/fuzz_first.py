"""``kvproof fuzz``'s first phase: the model's own finding, then the engine's confirmation.

The model-side finding is printed (and flushed) before the engine or torch is loaded, so a
buggy variant reports within a second from the shell; the engine's verdict on the same
trace follows, timed separately. See ``checker/conformance/model_first.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def model_first(
    args: argparse.Namespace, variant: Any, sizes: dict[str, int], console: Any
) -> int | None:
    """The exit code when the model found something (always 1), or None to go on fuzzing."""
    from kvproof.checker.cli.written import wrote
    from kvproof.checker.conformance.fuzz import COUNTERS
    from kvproof.checker.conformance.model_first import confirm, confirmed_kind, model_search
    from kvproof.checker.traces.tracefile import write_jsonl
    from kvproof.model.handoff.assumptions import handoff_for
    from kvproof.model.lang.explain import action_label

    found = model_search(variant, sizes, faults=args.faults, seed=args.seed, max_seconds=0.5)
    if found is None:
        return None
    trace = found.trace
    saved = Path(args.out) / f"{variant.name}.fuzz-{args.seed}.jsonl"
    write_jsonl(trace, saved, protocol=handoff_for(variant))
    steps = ", ".join(action_label(handoff_for(variant), x) for x in trace.steps)
    if not args.json:
        console.print(
            f"[bold red]VIOLATION[/] (model-side finding, {found.seconds:.2f} s, "
            f"{found.walks} model walks): invariant [bold]{found.invariant}[/] violated "
            f"after {len(trace.steps)} steps: {steps}"
        )
        wrote(console, [saved])
        console.print("confirming on the engine ...")
        sys.stdout.flush()  # reported now, not when the engine is done
    start = time.perf_counter()
    report = confirm(trace, variant)
    engine_s = time.perf_counter() - start
    from kvproof.checker.cli.replay import SHOWS, failure_summary

    confirmed = report.failed and report.divergence is None and report.crash is None
    kind = confirmed_kind(report)
    summary = (
        failure_summary(report)
        if report.failed
        else "the engine does not break the invariant the model breaks (a divergence)"
    )
    if args.json:
        import json

        print(
            json.dumps(
                {
                    "variant": variant.name,
                    # The engine campaign did not run: one finding, the confirmed one.
                    "traces": 0,
                    "steps": 0,
                    "faults_injected": 0,
                    **{key: int(k == kind) for k, key in COUNTERS.items()},
                    "seconds": round(found.seconds + engine_s, 2),
                    "seconds_to_first_finding": round(found.seconds, 2),
                    "workers": 1,
                    "seed": args.seed,
                    "faults": args.faults,
                    "finding": {
                        "kind": kind,
                        "shows": report.shows,
                        "source": "model",
                        "invariant": found.invariant,
                        "detail": f"model violates {found.invariant}",
                        "steps": [str(x) for x in trace.steps],
                        "model_walks": found.walks,
                        "seconds": round(found.seconds, 3),
                        "trace": str(saved),
                        "replay": f"kvproof replay {saved}",
                        "engine": {
                            "confirmed": confirmed,
                            "shows": report.shows,
                            "leak": report.leak,
                            "summary": summary,
                            "seconds": round(engine_s, 2),
                        },
                    },
                },
                indent=2,
            )
        )
        return 1
    if args.html:
        from kvproof.checker.cli.fuzz import write_fuzz_html

        html = write_fuzz_html(Path(args.html), variant, trace, args.seed)
        if not args.json:
            wrote(console, [html])
    tag = "[bold red]ENGINE CONFIRMS[/]" if confirmed else "[bold red]ENGINE DISAGREES[/]"
    console.print(f"{tag} ({engine_s:.2f} s): {summary}")
    console.print(f"what clients saw: {SHOWS[report.shows]}\nreplay: kvproof replay {saved}")
    return 1
