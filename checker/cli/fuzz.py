"""Fuzz a variant: model-guided random walks on the engine, shrunk to a minimal trace.

``kvproof fuzz VARIANT [--traces N] [--seed S] [--faults] [--workers W] [--ray [ADDRESS]]
[--resume DIR] [--device cuda]``: each walk is a run of the model forced on the reference
engine (with ``--faults``: transfer failures, disconnects, aborts, timeouts, lease expiries,
reordered writes, duplicate status messages), checked after every step. The first finding
is shrunk by Hypothesis, saved as a trace in ``--out`` and printed as a ``kvproof replay``
command. First, the model alone is searched (random walks, no engine, no torch): a
model-side finding is reported at once, then confirmed on the engine
(``--engine-only`` skips this). Exit 1 on a finding, 0 when every walk was clean.

A finding's kind is a divergence, an engine crash, or, once the engine has drained to every
client's answer, what the clients saw, in replay's words: a **leak** (a response carried
another tenant's canary), a **wrong_answer**, or a **violation** (an invariant broken on
the state, no response shows it). ``--json`` counts each kind (``divergences``, ``leaks``,
``wrong_answers``, ``violations``, ``crashes``) and gives the finding's ``kind`` and
``shows`` (replay's ``shows``: leak, wrong_answer, engine_state or nothing).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_int
from kvproof.checker.cli.consoles import console_for
from kvproof.checker.cli.progress import add_quiet_option
from kvproof.checker.distrib.options import add_ray_option
from kvproof.checker.report.tables import print_table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help="variant name or .toml path")
    parser.add_argument("--traces", type=positive_int, default=200, help="walks to run (200)")
    parser.add_argument(
        "--seed",
        type=int_at_least(0, 2**32 - 1),
        default=0,
        help="seed of the walks: the same seed gives the same walks and finding",
    )
    parser.add_argument("--faults", action="store_true", help="inject environment faults")
    parser.add_argument(
        "--workers",
        type=int_at_least(1, 256),
        default=None,
        help="processes (default: CPUs, max 4)",
    )
    parser.add_argument(
        "--requests", type=int_at_least(1, 16), default=2, help="requests per walk (2)"
    )
    parser.add_argument(
        "--pages", type=int_at_least(1, 64), default=3, help="decode pages per walk (3)"
    )
    parser.add_argument("--out", default="kvproof-out", help="folder for a failing trace")
    parser.add_argument("--html", metavar="DIR", help="an HTML report of the finding here")
    parser.add_argument(
        "--engine-only",
        action="store_true",
        help="skip the model-first search; walk model and engine in lockstep from the start",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="engine device (cpu)"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="campaign folder: batches done are recorded there and skipped on a rerun; "
        "findings are written to DIR/findings as they arrive",
    )
    add_ray_option(parser)
    add_quiet_option(parser)


def run(args: argparse.Namespace) -> int:

    from kvproof.checker.cli.fuzz_first import model_first
    from kvproof.checker.cli.paths import check_output_dir
    from kvproof.checker.cli.progress import heartbeat_s
    from kvproof.checker.cli.written import wrote
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    # Before the work: a finding that cannot be saved is a finding lost.
    check_output_dir(args.out, "--out")
    check_output_dir(args.html, "--html")
    heartbeat_s()  # a bad KVPROOF_HEARTBEAT_S is exit 2 before any work
    variant = load_variant(args.variant)
    sizes = {"Req": args.requests, "Page": args.pages}
    console = console_for(stderr=args.json)
    if args.device == "cuda" and args.ray is None:
        import torch

        if not torch.cuda.is_available():
            raise KvproofInputError("no CUDA device here (a Ray cluster's: add --ray)", "--device")
    # A campaign on a cluster or resumed from its folder is the engine's: no model-first pass.
    if not args.engine_only and args.ray is None and args.resume is None:
        code = model_first(args, variant, sizes, console)
        if code is not None:
            return code
    # Nothing in the model: the engine campaign (loads torch), where engine-only bugs show.
    import torch
    from rich.table import Table

    from kvproof.checker.cli.progress import progress_for
    from kvproof.checker.conformance.fuzz import COUNTERS, default_workers, fuzz
    from kvproof.checker.distrib.options import executor_for
    from kvproof.checker.traces.tracefile import write_jsonl
    from kvproof.model.handoff.assumptions import handoff_for
    from kvproof.model.lang.explain import action_label

    torch.set_num_threads(1)  # tiny models: intra-op threads only add wake-up latency
    workers = args.workers if args.workers is not None else default_workers()
    name = variant.name
    ran = [0]

    def batch(st) -> None:  # type: ignore[no-untyped-def]
        # a batch's result is the progress a campaign has: walks inside it are milliseconds
        ran[0] += st.traces
        progress.advance(st.traces)
        progress.stage(name, "fuzz", f"{ran[0]}/{args.traces} traces")

    with progress_for(f"fuzz {name}", args.traces, quiet=args.quiet, console=console) as progress:
        progress.stage(name, "fuzz", f"0/{args.traces} traces")
        ray = executor_for(args.ray, workers)
        try:
            result = fuzz(
                variant,
                traces=args.traces,
                seed=args.seed,
                faults=args.faults,
                workers=workers,
                sizes=sizes,
                on_batch=batch,
                device=args.device,
                executor=ray,
                resume=args.resume,
            )
        finally:
            if ray is not None:
                workers = ray.slots
                ray.close()
        found = result.finding
        said = f"no finding in {result.stats.traces} traces" if found is None else found.kind
        progress.done(name, said, advance=0)
    s = result.stats
    saved = None
    if result.finding is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        saved = out / f"{variant.name}.fuzz-{args.seed}.jsonl"
        write_jsonl(result.finding.trace, saved, protocol=handoff_for(variant))
    html = None
    if result.finding is not None and args.html:
        html = write_fuzz_html(Path(args.html), variant, result.finding.trace, args.seed)
    row = {
        "variant": variant.name,
        "traces": s.traces,
        "steps": s.steps,
        "faults_injected": s.faults,
        **{key: getattr(s, key) for key in COUNTERS.values()},
        "seconds": round(s.seconds, 2),
        "seconds_to_first_finding": None
        if s.first_finding_s is None
        else round(s.first_finding_s, 2),
        "workers": workers,
        "seed": args.seed,
        "faults": args.faults,
        "ray": args.ray,
    }
    if args.json:
        f = result.finding
        row["finding"] = (
            None
            if f is None
            else {
                "kind": f.kind,
                "shows": f.shows,
                "detail": f.detail,
                "steps": [str(x) for x in f.trace.steps],
                "trace": str(saved),
                "replay": f"kvproof replay {saved}",
                "html": None if html is None else str(html),
            }
        )
        print(json.dumps(row, indent=2))
        return result.exit_code
    table = Table(title=f"fuzz {variant.name}" + (" with faults" if args.faults else ""))
    cols = ("traces", "steps", "faults_injected", *COUNTERS.values(), "seconds")
    for c in cols:
        table.add_column(c.replace("_", " "), justify="right")
    table.add_row(*(str(row[c]) for c in cols))
    print_table(console, table)
    f = result.finding
    if f is None:
        console.print(f"[green]no finding[/] in {s.traces} traces")
        return 0
    kind = f.kind.replace("_", " ").upper()  # type: ignore[union-attr]
    console.print(f"[bold red]{kind}[/]: {f.detail}")
    console.print(
        f"shrunk trace ({len(f.trace.steps)} steps): "
        + ", ".join(action_label(handoff_for(variant), x) for x in f.trace.steps)
    )
    wrote(console, [saved] + ([html] if html is not None else []))
    console.print(f"replay: kvproof replay {saved}", highlight=False, soft_wrap=True)
    return 1


def write_fuzz_html(out: Path, variant, trace, seed: int) -> Path:  # type: ignore[no-untyped-def]
    """The finding's report, with the shrunk trace replayed for the engine's answers."""
    from kvproof.checker.cli.report import replay_rows
    from kvproof.checker.report.html_page import trace_page, write
    from kvproof.model.handoff.assumptions import handoff_for

    out.mkdir(parents=True, exist_ok=True)
    rows, summary = replay_rows(trace, variant)
    path = out / f"{variant.name}.fuzz-{seed}.html"
    page = trace_page(
        trace,
        handoff_for(variant),
        variant=variant,
        responses=rows,
        replay_summary=summary,
    )
    write(path, page)
    return path
