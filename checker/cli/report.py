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

from kvproof.checker.cli.argtypes import same_names
from kvproof.checker.cli.paths import check_output_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.jsonl or .itf.json)")
    parser.add_argument("--variant", help="engine variant to replay on (default: the trace's)")
    parser.add_argument("--html", required=True, metavar="OUT.html", help="the report to write")
    parser.add_argument(
        "--no-replay",
        action="store_false",
        dest="replay",
        help="model side only: do not run the engine",
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=32, help="decode length of the replay (32)"
    )


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.replay import print_written
    from kvproof.checker.runs.replay_run import report

    check_output_file(args.html, "--html")
    done = report(args.trace, args.html, args.variant, **same_names(report, args))
    print_written(done)
    return done.exit_code
