"""Stage events from the workers to this process, while the workers run.

A unit (a variant's check) runs for seconds to minutes in a worker process or a Ray task;
its result comes back only at its end. For progress (``checker/report/progress_display.py``) the
worker's ``progress(variant, stage, detail)`` calls travel on a queue that a thread here
drains into the caller's callback:

- a local pool (``forwards = "process"``): a ``multiprocessing`` Manager queue, whose proxy
  pickles into the unit's arguments (a plain ``multiprocessing.Queue`` may only be inherited)
  and works from the fork ``check_pool`` makes per unit;
- Ray (``forwards = "ray"``): ``ray.util.queue.Queue``, an actor any task can reach;
- in this process (``forwards = "inline"``): the callback itself.

An executor that says nothing forwards nothing: its units report when their results arrive.
A put that fails (the run is closing) is dropped: progress is never worth a failed check.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.checker.distrib.executor import processes

ProgressFn = Callable[[str, str, str], None]

POLL_S = 0.1  # how often the drain thread looks whether the run has ended


@dataclass(frozen=True)
class QueueSink:
    """The worker's end: a picklable ``ProgressFn`` that puts events on the queue."""

    queue: Any

    def __call__(self, variant: str, stage: str, detail: str = "") -> None:
        with contextlib.suppress(OSError, EOFError, queue.Full):
            self.queue.put((variant, stage, detail))


@contextlib.contextmanager
def forwarded(progress: ProgressFn | None, kind: str | None) -> Iterator[ProgressFn | None]:
    """A ``ProgressFn`` for the units to carry, drained into ``progress`` until the block ends
    (every event put before the end is delivered). None when there is nothing to forward."""
    if progress is None or kind is None:
        yield None
        return
    if kind == "inline":
        yield progress
        return
    with contextlib.ExitStack() as stack:
        if kind == "ray":
            from ray.util.queue import Queue  # its Empty is a queue.Empty

            q = Queue(actor_options={"num_cpus": 0})  # no CPU taken from the units
            stack.callback(q.shutdown)
        else:
            q = stack.enter_context(processes().Manager()).Queue()
        stop = threading.Event()

        def drain() -> None:
            while not stop.is_set():
                with contextlib.suppress(queue.Empty):
                    progress(*q.get(timeout=POLL_S))
            with contextlib.suppress(queue.Empty):
                while True:
                    progress(*q.get_nowait())

        thread = threading.Thread(target=drain, name="kvproof-events", daemon=True)
        thread.start()
        try:
            yield QueueSink(q)
        finally:
            stop.set()
            thread.join()
