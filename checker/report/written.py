"""Every command that writes a file says so: one line a file, ``wrote PATH``.

On stdout for people; a command run with ``--json`` passes a stderr console (its stdout is
the JSON, which lists the files itself where it has a place for them).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def wrote(console: Any, paths: Iterable[Path | str]) -> None:
    for path in paths:
        # soft_wrap: a long path stays on one line, whole, in a pipe too
        console.print(f"wrote {path}", highlight=False, soft_wrap=True, markup=False)
