"""Executors: one interface over "run these units, give me their results".

A ``Unit`` is a picklable call (a module-level function and plain-data arguments) with the
resources it asks for. ``Executor.imap`` runs units as slots free up and yields
``(index, result)`` in completion order; ``ordered`` turns that into unit order, skips
units a campaign already has, and stops feeding units past the first one the caller says
ends the run (a fuzz finding): the merge is the serial run's, whatever finished first.

``--ray [ADDRESS]`` (``fuzz``, ``check --all``, ``prove --all``) runs the units as Ray tasks,
on a local Ray (started here, shut down on close) or a cluster: parsing the flag never
imports Ray; only a ``RayExecutor`` does, and only when it was given. Each unit is one task
with ``max_retries``: a worker lost mid-campaign (its process killed, its node gone) is run
again by Ray, and since a unit is a pure function of its arguments the retry gives the same
result. A unit that asks for GPUs (``fuzz --device cuda``) is placed by Ray on a node with
a free GPU; Ray sets ``CUDA_VISIBLE_DEVICES`` for the task. (Ray docs, "Fault tolerance >
Tasks": system failures are retried ``max_retries`` times, default 3; "Accelerator
support": ``num_gpus`` reserves GPUs and sets the variable.)

Stage events travel from the units to this process while they run (``forwarded``): a unit
(a variant's check) runs for seconds to minutes in a worker process or a Ray task, and its
result comes back only at its end. For progress (``checker/report/progress_display.py``)
the worker's ``progress(variant, stage, detail)`` calls go on a queue that a thread here
drains into the caller's callback, as the executor's ``forwards`` says:

- a local pool (``"process"``): a ``multiprocessing`` Manager queue, whose proxy pickles
  into the unit's arguments (a plain ``multiprocessing.Queue`` may only be inherited) and
  works from the fork ``check_pool`` makes per unit;
- Ray (``"ray"``): ``ray.util.queue.Queue``, an actor any task can reach;
- in this process (``"inline"``): the callback itself.

An executor that says nothing forwards nothing: its units report when their results arrive.
A put that fails (the run is closing) is dropped: progress is never worth a failed check.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import multiprocessing
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from kvproof.spec.errors import KvproofInputError

ProgressFn = Callable[[str, str, str], None]


@dataclass(frozen=True)
class Unit:
    index: int
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    gpus: float = 0.0  # Ray asks the cluster for this many GPUs (local executors ignore it)

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


class Executor(Protocol):
    """Results of units as they finish; ``with executor:`` closes it at the end of the block
    (the executors here subclass it for that and for ``forwards``' default)."""

    slots: int  # units that run at once
    forwards: str | None = None  # how a unit's progress reaches the caller while it runs

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        """Results as units finish; closing the iterator cancels the units still queued."""
        ...

    def close(self) -> None:
        return None  # an executor that holds nothing

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Every unit in this process, in order (``--workers 1``), with one intra-op thread as
    in a pool's workers, the caller's torch setting restored after each unit. Run as the
    caller had torch (its default: a thread per core), a fuzz campaign in one process did
    7-9 traces/s against 36-74 with one thread, same machine and minute (issue 30,
    ``benchmarks/scale.py``): a tiny model's many small ops each wait at a barrier for a
    thread the OS has lent to a neighbour."""

    slots = 1
    forwards = "inline"

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        for unit in units:
            with single_thread():
                out = unit()
            yield unit.index, out


def run_unit(unit: Unit) -> Any:
    """A unit in a worker process (a pool's, a Ray task's): one thread, then the call."""
    one_thread()
    return unit()


def in_slots(
    units: Iterable[Unit],
    slots: int,
    start: Callable[[Unit], Any],
    ready: Callable[[list[Any]], Iterable[Any]],
    result: Callable[[Any], Any],
    cancel: Callable[[Any], Any],
) -> Iterator[tuple[int, Any]]:
    """Every executor's loop: up to ``slots`` units started (``start`` returns a handle),
    results yielded as ``ready`` handles come in; the handles still running when the
    caller stops are cancelled."""
    todo = iter(units)
    running: dict[Any, int] = {}  # handle -> unit index
    try:
        while True:
            while len(running) < slots and (unit := next(todo, None)) is not None:
                running[start(unit)] = unit.index
            if not running:
                return
            for handle in ready(list(running)):
                yield running.pop(handle), result(handle)
    finally:
        for handle in running:
            cancel(handle)


def one_thread() -> None:
    """In a worker process only (a caller's torch settings are the caller's): one intra-op
    thread, as the work units are many small CPU jobs (tiny models, solver calls)."""
    import os

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    else:  # read by torch when a unit first imports it
        os.environ.setdefault("OMP_NUM_THREADS", "1")


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One torch intra-op thread for the block, if torch is loaded; the setting before it
    is restored after (the caller's settings stay the caller's)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else 1
    if torch is not None and before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch is not None and before != 1:
            torch.set_num_threads(before)


def processes() -> Any:
    """Forked where the platform can (the workers inherit the imported modules: spawn would
    re-import torch in each)."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


class PoolExecutor(Executor):
    """A local process pool (``processes``)."""

    forwards = "process"

    def __init__(self, workers: int) -> None:
        self.slots = workers
        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=processes(), initializer=one_thread
        )

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        def first(futures: list[Future[Any]]) -> Iterable[Future[Any]]:
            return wait(futures, return_when=FIRST_COMPLETED)[0]

        def start(unit: Unit) -> Future[Any]:
            return self._pool.submit(run_unit, unit)

        return in_slots(units, self.slots, start, first, Future.result, Future.cancel)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def ordered(
    executor: Executor,
    units: Iterable[Unit],
    *,
    done: Mapping[int, Any] | None = None,
    stops: Callable[[Any], bool] = lambda _: False,
    on_arrival: Callable[[int, Any], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """``(index, result)`` in the order the units are fed, as if run one by one (``check``'s
    pool feeds them longest first and puts the verdicts back in job order itself).

    With ``stops``, ``units`` must come in increasing index order (a stop drops the higher
    indices). They are read lazily, one as a slot frees up: a campaign of a billion walks is
    an endless stream of batches, never a list of them (issue 41: ``fuzz --traces
    1000000000`` grew to 3.8 GB before its first walk).
    ``done``: results a campaign already holds (resume): not run again. ``stops``: a result
    that ends the run; units after it are no longer started, and results after it are
    dropped, so the answer does not depend on which worker was fastest. ``on_arrival`` sees
    every fresh result as it comes (progress, writing findings at once).
    """
    done = dict(done or {})
    buffered: dict[int, Any] = dict(done)  # results not yet released, in unit order
    first_stop = min((i for i, r in done.items() if stops(r)), default=None)
    order: deque[int] = deque()  # indices the feed has passed, not yet released

    def feed() -> Iterator[Unit]:
        for unit in units:
            if first_stop is not None and unit.index > first_stop:
                return
            order.append(unit.index)
            if unit.index not in done:
                yield unit

    stream = executor.imap(feed())
    try:
        # the None after the stream: the feed has run to its end (or to the first stop),
        # release what the campaign already held past the last fresh result
        for arrived in itertools.chain(stream, [None]):
            if arrived is not None:
                index, result = arrived
                if on_arrival is not None:
                    on_arrival(index, result)
                if stops(result) and (first_stop is None or index < first_stop):
                    first_stop = index
                buffered[index] = result
            while order and order[0] in buffered:
                index = order.popleft()
                result = buffered.pop(index)
                yield index, result
                if stops(result):
                    return
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


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
            from ray.util.queue import Queue

            q = Queue(actor_options={"num_cpus": 0})  # no CPU taken from the units
            stack.callback(q.shutdown)
        else:
            q = stack.enter_context(processes().Manager()).Queue()

        def drain() -> None:
            for event in iter(q.get, None):  # None: the block has ended, after every event
                progress(*event)

        thread = threading.Thread(target=drain, name="kvproof-events", daemon=True)
        thread.start()
        try:
            yield QueueSink(q)
        finally:
            with contextlib.suppress(OSError, EOFError):
                q.put(None)
            thread.join()


def make_executor(workers: int) -> SerialExecutor | PoolExecutor:
    """This process for one worker, else a local pool (Ray: ``executor_for``)."""
    return SerialExecutor() if workers <= 1 else PoolExecutor(workers)


LOCAL = "local"  # what a bare ``--ray`` parses to: start a Ray on this machine


def add_ray_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="run the work units on Ray: bare, a local Ray started here; 'auto' or "
        "host:port, a running cluster (needs: pip install 'kvproof[ray]')",
    )


def executor_for(ray: str | None, workers: int) -> Any:
    """A Ray executor for ``--ray`` (``workers``: CPUs of a Ray started here), or None."""
    if ray is None:
        return None
    return RayExecutor(None if ray == LOCAL else ray, num_cpus=workers)


class RayExecutor(Executor):
    """``address``: None starts a local Ray with ``num_cpus`` (and ``num_gpus`` /
    ``resources``, which tests use to declare a fake GPU on a CPU machine); ``auto`` or
    ``host:port`` joins a running cluster. A Ray already initialised in this process (a
    test's fixture, a notebook) is used as it is and left running."""

    forwards = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        num_gpus: int | None = None,
        resources: Mapping[str, float] | None = None,
        max_retries: int = 3,
    ) -> None:
        try:
            import ray
        except ImportError:
            why = "needs Ray, which is not installed: pip install 'kvproof[ray]'"
            raise KvproofInputError(why, "--ray") from None
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            if address is None:
                ray.init(
                    num_cpus=num_cpus,
                    num_gpus=num_gpus,
                    resources=dict(resources) if resources else None,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                )
            else:
                ray.init(address=address, logging_level=logging.WARNING)
        self._task = ray.remote(max_retries=max_retries)(run_unit)
        cluster = ray.cluster_resources()
        self.slots = max(1, int(cluster.get("CPU", 1)))
        self.gpus = int(cluster.get("GPU", 0))

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        ray = self._ray

        def start(unit: Unit) -> Any:
            if unit.gpus and unit.gpus > self.gpus:
                raise KvproofInputError(
                    f"a unit asks for {unit.gpus} GPU(s); the Ray cluster has {self.gpus}",
                    "--device",
                )
            return self._task.options(num_cpus=1, num_gpus=unit.gpus).remote(unit)

        def first(refs: list[Any]) -> list[Any]:
            return ray.wait(refs, num_returns=1)[0]

        # One unit per slot in flight (and one queued), so a stop stops early.
        return in_slots(units, self.slots + 1, start, first, ray.get, ray.cancel)

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False
