"""Draw a trace as a self-contained HTML report (chart, page pool, the engine's answers).

``kvproof report TRACE [--variant V] --html OUT.html``: TRACE is a ``.jsonl`` or
``.itf.json`` trace (``kvproof check --out``, ``kvproof fuzz``, ``traces/``). The report
shows a message sequence chart, the decode page pool over time with the stale read marked,
and, after replaying the trace on the reference engine configured by V (default: the
trace's own variant), what each client got beside the single-node engine's answer. One
file, no network: open it from disk, print it to PDF. ``--no-replay`` draws the model side
only (no torch). Exit 0 when the report is written, 2 on bad input.
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.paths import check_output_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.jsonl or .itf.json)")
    parser.add_argument("--variant", help="engine variant to replay on (default: the trace's)")
    parser.add_argument("--html", required=True, metavar="OUT.html", help="the report to write")
    parser.add_argument(
        "--no-replay", action="store_true", help="model side only: do not run the engine"
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=32, help="decode length of the replay (32)"
    )


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.report.html_page import trace_page
    from kvproof.checker.runs.replay_run import load_trace, replay_rows
    from kvproof.checker.traces.carried_variant import trace_variant
    from kvproof.checker.traces.tracefile import check_against
    from kvproof.model.handoff import protocol_of
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.files import write_text_atomic
    from kvproof.spec.variant import load_variant

    out = check_output_file(args.html, "--html")
    assert out is not None  # --html is required
    if args.max_new_tokens < 1:
        raise KvproofInputError("must be >= 1", "--max-new-tokens")
    trace = load_trace(args.trace, args.variant)
    own = trace_variant(trace.variant, trace.meta, args.trace)
    protocol = protocol_of(own, assumed=False)
    check_against(trace, protocol, args.trace)
    rows = summary = None
    if not args.no_replay:
        engine_variant = load_variant(args.variant) if args.variant else own
        rows, summary = replay_rows(trace, engine_variant, args.max_new_tokens)
    write_text_atomic(
        out, trace_page(trace, protocol, variant=own, responses=rows, replay_summary=summary)
    )
    print(f"wrote {out}" + (f" ({summary['line']})" if summary else ""))
    return 0
