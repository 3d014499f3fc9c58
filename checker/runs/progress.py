"""How a run shows that it is working, as callbacks the caller plugs in (none by default).

A run never prints: the CLI passes a rich progress bar and a spinner
(``checker/cli/progress.py``, ``console.status``); a notebook or a test passes nothing.
Two kinds, because rich allows one live display at a time: a ``bar`` over counted work (the
variants of ``check --all``, the walks of ``fuzz``) and a ``status`` for one long step with
no count (a complete search), never both at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

# bar(description, total) -> a context that yields advance(n)
Bar = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]
# status(description) -> a context around one step
Status = Callable[[str], AbstractContextManager[Any]]


@contextlib.contextmanager
def _no_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    yield lambda n=1: None


def _no_status(description: str) -> AbstractContextManager[Any]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Progress:
    bar: Bar = _no_bar
    status: Status = _no_status


QUIET = Progress()
