"""The rich console every command prints through: output that survives a pipe; and the
progress a run reports on it.

rich draws at 80 columns when stdout is not a terminal, so in a CI log ``check --all``'s
cells became ``vi…`` and ``variants`` split names and URLs over lines. Off a terminal the
console is ``PIPE_WIDTH`` wide unless ``COLUMNS`` is set, which rich then follows;
``checker/report/tables.py`` keeps names, numbers and URLs whole at either width.

Off a terminal every renderable is also drawn only as wide as its content: a panel or a
rule would otherwise stretch to the console's width, and at the 4,096 columns this module
once used, ``kvproof audit > a.txt`` wrote 4,096-character lines of padding (issue 41).

The progress displays (rich on a terminal, log lines and heartbeats off one) are
``checker/report/progress_display.py``; a run reports through ``checker/runs/progress.py``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from kvproof.checker.report.progress_display import heartbeat_s, progress_for
from kvproof.checker.runs.progress import Progress

# A CI log's width: prose wraps here, tables wrap between words (never inside one), and
# no line is longer than its content or this width (tests/checker/cli/test_pipe_widths.py).
PIPE_WIDTH = 120


def console_for(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    width = None if os.environ.get("COLUMNS") else PIPE_WIDTH  # rich follows COLUMNS
    return _fitted(Console)(stderr=stderr, width=width)


def _fitted(base: type) -> type:
    """A console whose ``print`` draws one renderable at its content's width."""
    from rich.measure import Measurement

    class FittedConsole(base):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            if len(objects) == 1 and not isinstance(objects[0], str) and "width" not in kwargs:
                need = Measurement.get(self, self.options, objects[0]).maximum
                kwargs["width"] = max(1, min(need, self.width))
            super().print(*objects, **kwargs)

    return FittedConsole


def emit(done: Any, as_json: bool, render: Callable[[], object]) -> int:
    """Print a run: its ``--json`` document on stdout, or ``render()`` for people; its exit
    code."""
    if as_json:
        print(json.dumps(done.to_json(), indent=2))
    else:
        render()
    return int(done.exit_code)


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet", action="store_true", help="no progress on stderr (results are unchanged)"
    )


def for_run(args: argparse.Namespace) -> tuple[Any, Progress]:
    """The console a run prints on (stderr under ``--json``: the document owns stdout) and
    the progress it reports there (none with ``--quiet``). A bad ``KVPROOF_HEARTBEAT_S`` is
    exit 2 here, before any work."""
    heartbeat_s()
    console = console_for(stderr=args.json)
    return console, Progress(
        open=lambda what, total: progress_for(what, total, quiet=args.quiet, console=console)
    )
