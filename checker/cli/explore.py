"""Explicit-state search of a small instance: state counts, shortest counterexamples, deadlocks.

``kvproof explore VARIANT --requests N --pages M``: breadth-first search of every reachable
state (TLC style, pages reduced by symmetry), per invariant a shortest counterexample
(replayed), deadlocks (requests stuck holding pages), and optionally the state graph as
DOT or GraphML. The slow baseline next to ``kvproof check`` (BMC) and ``kvproof prove``.
Exit 0 no violation, 1 a violation, 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kvproof.checker.cli.argtypes import positive_float, positive_int, same_names
from kvproof.checker.cli.consoles import console_for, emit
from kvproof.checker.cli.paths import check_names, check_output_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", metavar="VARIANT", help="variant name or .toml path")
    parser.add_argument("--requests", type=positive_int, default=2, help="requests (default 2)")
    parser.add_argument("--pages", type=positive_int, default=3, help="decode pages (default 3)")
    parser.add_argument("--max-states", type=positive_int, metavar="N", help="stop after N states")
    parser.add_argument(
        "--max-seconds", type=positive_float, metavar="S", help="stop after S seconds (> 0)"
    )
    parser.add_argument(
        "--no-symmetry",
        action="store_false",
        dest="symmetry",
        help="do not reduce states under page permutations",
    )
    parser.add_argument(
        "--stop-at-violation",
        action="store_true",
        help="do not expand violating states (TLC): shortest traces without earlier violations",
    )
    parser.add_argument("--dot", metavar="FILE", help="write the state graph as Graphviz DOT")
    parser.add_argument("--graphml", metavar="FILE", help="write the state graph as GraphML")
    parser.add_argument("--html", metavar="OUT.html", help="write the state graph as HTML/SVG")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--protocol", help="user protocol factory 'module:attr'")
    parser.add_argument("--variants-dir", type=Path, help="folder of variant TOMLs")


def run(args: argparse.Namespace) -> int:
    check_names([args.variant], args.variants_dir, args.protocol)
    from kvproof.checker.runs.explore_run import ExploreOptions, explore_variant

    check_output_file(args.dot, "--dot")
    check_output_file(args.graphml, "--graphml")
    check_output_file(args.html, "--html")
    options = ExploreOptions(**same_names(ExploreOptions, args))
    from kvproof.checker.render.explore import render
    from kvproof.checker.report.tables import wrote

    console = console_for()
    with _spinner(console, off=args.json) as progress:
        done = explore_variant(
            args.variant, variants_dir=args.variants_dir, options=options, on_progress=progress
        )

    def show() -> None:
        render(console, done.result, done.protocol)
        wrote(console, done.files)

    return emit(done, args.json, show)


@contextlib.contextmanager
def _spinner(console: Any, off: bool) -> Iterator[Callable[[int, int, int], None]]:
    """The search's states, depth and frontier on a terminal; nothing in a pipe or under
    ``--json``."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        transient=True,
        console=console,
        disable=off or not console.is_terminal,  # a pipe gets no progress (nor a blank line)
    ) as bar:
        task = bar.add_task("exploring")

        def progress(states: int, depth: int, left: int) -> None:
            bar.update(task, description=f"{states:,} states, depth {depth}, {left:,} left")

        yield progress
