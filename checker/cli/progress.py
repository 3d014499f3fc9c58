"""A progress bar for people, nothing for pipes.

On a terminal: rich's transient bar. Elsewhere (CI logs, ``| less``, tests) no bar, no
blank line left where it was, and ``rich.progress`` is not even imported (it costs more
start-up time than some whole runs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def progress_bar(
    console: Any, description: str, total: int | None, *, enabled: bool = True
) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n)``; a no-op unless enabled and ``console`` is a terminal."""
    if not enabled or not console.is_terminal:
        yield lambda n=1: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
