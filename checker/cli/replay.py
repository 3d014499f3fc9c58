"""Replay a trace on the reference engine and compare it with the model after every step.

``kvproof replay TRACE [--variant V]``: TRACE is a ``.jsonl`` trace or an ``.itf.json`` file.
Each model action is forced on the engine (which page the allocator picks, when a write
lands); after each step the abstraction of the engine's state (page owners, page contents,
phases, statuses) must equal the model's. The first divergence is shown side by side.
After the trace the engine drains (every client gets its answer, no new fault; not with
``--no-drain``) and the output oracle (single-node tokens, canaries) judges every 200. The
verdict says what clients saw: a leak (another tenant's canary in a response), a wrong
answer, or an invariant broken on the engine's state only. Exit 1 on any of these or a
divergence, 0 otherwise (also when the variant does not enable the trace).
"""

from __future__ import annotations

import argparse

from kvproof.checker.cli.argtypes import int_at_least, same_names
from kvproof.checker.cli.consoles import console_for, emit


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.jsonl or .itf.json)")
    parser.add_argument(
        "--variant", help="engine and model variant (default: the trace's own variant)"
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int_at_least(1, 4096),
        default=32,
        help="decode length for the oracle (32)",
    )
    parser.add_argument(
        "--no-drain", action="store_false", dest="drain", help="stop at the trace's last step"
    )
    parser.add_argument(
        "--loops",
        type=int_at_least(1, 1000),
        default=3,
        metavar="K",
        help="a lasso: run its loop K times after the stem (3)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--raw", action="store_true", help="the model's cells, not engine words")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.replay import print_report
    from kvproof.checker.runs.replay_run import replay

    done = replay(args.trace, args.variant, **same_names(replay, args))
    return emit(done, args.json, lambda: print_report(done.report, console_for(), raw=args.raw))
