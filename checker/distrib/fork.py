"""One call in a forked child, its result pickled back through a pipe.

Two callers: ``ForkExecutor`` runs each variant's check in a fresh fork (``check --all``'s
local pool, ``verify/check_pool.py``), and ``verify/driver.py`` proves in a child while
the BMC goes on in this process. The child is a copy, so its Z3 work leaves this process's
context as it was.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.checker.distrib.executor import Executor, Unit, in_slots


@dataclass(eq=False)  # a handle: hashed by identity
class Child:
    pid: int
    fd: int | None  # the pipe's read end (None once read or killed)
    what: str  # names the call when the child died without a result

    def result(self) -> Any:
        """Wait for the child: its return value, or its exception raised here (typed if it
        pickled)."""
        assert self.fd is not None, "read once"
        with os.fdopen(self.fd, "rb") as inp:
            data = inp.read()
        self.fd = None
        os.waitpid(self.pid, 0)
        if not data:
            raise RuntimeError(f"{self.what} died without a result")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    def kill(self) -> None:
        """Stop a child whose result nobody will read."""
        if self.fd is not None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self.fd)
            self.fd = None


def fork_call(fn: Callable[..., Any], *args: Any, what: str = "the forked call") -> Child:
    """Start ``fn(*args)`` in a forked child (POSIX only: callers check ``os.fork``)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        os.close(read)
        try:
            try:
                data = pickle.dumps((True, fn(*args)))
            except Exception as exc:  # handed to the parent, raised there (typed if it pickles)
                try:
                    data = pickle.dumps((False, exc))
                except Exception:
                    data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
            with os.fdopen(write, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write)
    return Child(pid, read, what)


class ForkExecutor(Executor):
    """Each unit in a fresh fork of this process, ``slots`` at a time (an ``Executor``).

    Nothing of a unit is pickled but its result: the child inherits the function and its
    arguments, closures and protocols included, so what the parent built once per unit is
    the child's without a second build. A fresh fork per unit also keeps Z3 out of the way:
    Z3 has one global context per process that keeps growing, so a process that already
    checked other variants checks the next one slower and may pick another, equally short,
    counterexample; forked from this (Z3-clean) process, each unit's result is the one a run
    of that unit alone gives, whatever the scheduling."""

    forwards = "process"  # the Manager queue's proxy is inherited (``forwarded``)

    def __init__(self, slots: int) -> None:
        self.slots = slots

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        def start(unit: Unit) -> Child:
            return fork_call(unit, what=f"work unit {unit.index}")

        def ready(children: list[Child]) -> list[Child]:
            fds = select.select([c.fd for c in children if c.fd is not None], [], [])[0]
            return [c for c in children if c.fd in fds]

        return in_slots(units, self.slots, start, ready, Child.result, Child.kill)
