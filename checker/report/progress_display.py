"""Progress for people and for logs, never on stdout (the CLI plugs it into a run).

Issue #28: off a terminal this module used to print nothing, so ``check --all > log`` was
silent for 9 minutes and a CI job looked hung. Now progress always goes to stderr:

- **On a terminal**: rich's transient display, a bar counting finished units and a line per
  variant at work with its stage (BMC depth k, proof, complete search, necessity) and its
  elapsed time. It is drawn on the command's console when that is the same terminal, so the
  results printed meanwhile land above it.
- **Off a terminal** (CI logs, ``2> err``, tests): plain lines, one as each variant finishes
  (``[3/22] sglang-0.5.22-pd: holds as expected (12.3 s)``), and a heartbeat with the current
  stage for any variant that has said nothing for ``KVPROOF_HEARTBEAT_S`` seconds (25)
  (``... sglang-0.5.22-pd: BMC depth 11 (45 s)``).
- ``--quiet``: nothing. ``--json`` keeps stdout one JSON document: progress is on stderr.

The library reports stages through a plain callback, ``progress(variant, stage, detail)``
(a ``ProgressFn``); worker processes and Ray tasks forward theirs to this process while they
run (``checker/distrib/executor.py``, where the type is). ``rich.progress`` is imported only
for a terminal: it costs more start-up time than some whole runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from kvproof.spec.errors import KvproofInputError

HEARTBEAT_ENV = "KVPROOF_HEARTBEAT_S"  # tests shorten it; a CI log may lengthen it
# Under the "at least every 30 s", with the heartbeat thread's 1 s wake-ups.
HEARTBEAT_S = 25.0

# How each stage reads; ``detail`` is the depth, the assumption, the count of traces.
LABELS = {
    "start": "starting",
    "bmc": "BMC depth {detail}",
    "proof": "proof",
    "complete": "complete search",
    "necessity": "necessity of {detail}",
    "inference": "inferring an invariant",
    "fuzz": "{detail}",
    "ray": "{detail} on Ray",
}


def label(stage: str, detail: str = "") -> str:
    return LABELS.get(stage, stage + (" {detail}" if detail else "")).format(detail=detail)


class Display:
    """What a run drives (``checker/runs/progress.py``'s ``Reporter``): this base class
    is the silent one (``--quiet``, library calls); also callable as a ``ProgressFn`` for
    the stages workers forward."""

    def __call__(self, variant: str, stage: str, detail: str = "") -> None:
        self.stage(variant, stage, detail)

    def stage(self, variant: str, stage: str, detail: str = "") -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def done(self, variant: str, outcome: str, *, advance: int = 1) -> None:
        pass


@dataclass
class _Task:
    label: str
    started: float
    said: float  # when a line about it was last written


class LogLines(Display):
    """Plain lines for a log: one per finished variant, a heartbeat inside a long stage.

    A variant's stages after its ``done`` are ignored: a worker's last event can reach this
    process after its result (they travel on different channels)."""

    def __init__(
        self,
        stream: TextIO,
        total: int | None,
        heartbeat_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.total, self.heartbeat_s, self.clock = stream, total, heartbeat_s, clock
        self.count = 0
        self.began = clock()
        self._tasks: dict[str, _Task] = {}
        self._finished: set[str] = set()
        self._lock = threading.Lock()

    def stage(self, variant: str, stage: str, detail: str = "") -> None:
        with self._lock:
            if variant not in self._finished:
                now = self.clock()
                self._tasks.setdefault(variant, _Task("", now, now)).label = label(stage, detail)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.count += n

    def done(self, variant: str, outcome: str, *, advance: int = 1) -> None:
        with self._lock:
            self.count += advance
            task = self._tasks.pop(variant, None)
            self._finished.add(variant)
            started = task.started if task else self.began
            where = f"[{self.count}/{self.total}] " if self.total else ""
            self._write(f"{where}{variant}: {outcome} ({self.clock() - started:.1f} s)")

    def beat(self) -> None:
        """A line for each variant that has said nothing for a heartbeat."""
        with self._lock:
            now = self.clock()
            for variant, task in self._tasks.items():
                if now - task.said >= self.heartbeat_s:
                    task.said = now
                    self._write(f"... {variant}: {task.label} ({now - task.started:.0f} s)")

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()  # a log reader (or a pipe) sees it now, not at exit


class Live(Display):
    """rich's transient display: the bar, and a row per variant at work."""

    def __init__(self, console: Any, description: str, total: int | None) -> None:
        import rich.progress as rp

        self._bar = rp.Progress(
            rp.SpinnerColumn(),
            rp.TextColumn("{task.description}"),
            rp.BarColumn(),
            rp.TextColumn("{task.fields[count]}"),
            rp.TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.total = total
        self._done = 0
        self._main = self._bar.add_task(description, total=total, count=self._count(0))
        self._rows: dict[str, Any] = {}
        self._finished: set[str] = set()
        self._lock = threading.Lock()

    def _count(self, n: int) -> str:
        return f"{n}/{self.total}" if self.total else ""

    def stage(self, variant: str, stage: str, detail: str = "") -> None:
        text = f"  {variant}: {label(stage, detail)}"
        with self._lock:
            if variant in self._rows:  # a finished variant's row is gone: never added again
                self._bar.update(self._rows[variant], description=text)
            elif variant not in self._finished:
                self._rows[variant] = self._bar.add_task(text, total=None, count="")

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self._done += n
            self._bar.update(self._main, completed=self._done, count=self._count(self._done))

    def done(self, variant: str, outcome: str, *, advance: int = 1) -> None:
        with self._lock:
            self._finished.add(variant)
            row = self._rows.pop(variant, None)
            if row is not None:
                self._bar.remove_task(row)
        self.advance(advance)


def heartbeat_s() -> float:
    raw = os.environ.get(HEARTBEAT_ENV)
    if raw is None:
        return HEARTBEAT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise KvproofInputError(f"must be a positive number of seconds, not {raw!r}", HEARTBEAT_ENV)
    return value


@contextlib.contextmanager
def progress_for(
    description: str, total: int | None, *, quiet: bool = False, console: Any = None
) -> Iterator[Display]:
    """The progress for a command's run: silent, rich on a terminal, or log lines on stderr.

    ``total``: the units counted (variants; a fuzz campaign's traces), None when unknown.
    ``console``: the command's output console; the display uses it when it is the terminal
    that stderr is too (so prints during the run land above the display)."""
    if quiet:
        yield Display()
        return
    stream = sys.stderr  # read now: tests and callers may have replaced it
    every = heartbeat_s()
    if _is_terminal(stream):
        if console is None or not console.is_terminal:
            from rich.console import Console

            console = Console(stderr=True)
        live = Live(console, description, total)
        with live._bar:
            yield live
        return
    lines = LogLines(stream, total, every)
    stop = threading.Event()

    def beating() -> None:
        while not stop.wait(min(every / 5, 1.0)):
            lines.beat()

    thread = threading.Thread(target=beating, name="kvproof-heartbeat", daemon=True)
    thread.start()
    try:
        yield lines
    finally:
        stop.set()
        thread.join()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream: not a terminal
        return False
