"""The progress a command plugs into its run: ``--quiet``, and the display on stderr.

The displays (rich on a terminal, log lines and heartbeats off one) are
``checker/report/progress_display.py``; a run reports through ``checker/runs/progress.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

from kvproof.checker.report.progress_display import heartbeat_s, progress_for
from kvproof.checker.runs.progress import Progress

__all__ = ["add_quiet_option", "for_run", "heartbeat_s"]


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet", action="store_true", help="no progress on stderr (results are unchanged)"
    )


def for_run(console: Any, quiet: bool = False) -> Progress:
    """The progress a command plugs into its library run (``checker/runs/progress.py``)."""
    return Progress(
        open=lambda what, total: progress_for(what, total, quiet=quiet, console=console)
    )
