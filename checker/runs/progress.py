"""How a run shows that it is working: a reporter the caller plugs in (silent by default).

A run never prints. It opens a reporter around a piece of work (``Progress.open``: what it
is, and how many units it counts, or None) and tells it each variant's stage as work moves
on (BMC depth k, proof, necessity, complete search), ``advance`` for units counted without
a line, and ``done`` as a variant finishes. The CLI plugs in a rich display or log lines on
stderr (``checker/report/progress_display.py``, issue #28); a notebook or a test plugs in
nothing.
Worker processes and Ray tasks forward their stages to the reporter while they run
(``checker/distrib/executor.py``): a reporter is also callable as ``(variant, stage, detail)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from kvproof.checker.report.progress_display import Display

# What a run drives: ``stage``, ``advance``, ``done``, also callable as a ``ProgressFn``. The
# base class is the silent one; it lives beside the displays that subclass it.
Reporter = Display

# open(description, total) -> a context that yields the reporter for that work
Open = Callable[[str, "int | None"], AbstractContextManager[Reporter]]


@contextlib.contextmanager
def _silent(description: str, total: int | None) -> Iterator[Reporter]:
    yield Reporter()


@dataclass(frozen=True)
class Progress:
    open: Open = _silent


QUIET = Progress()
