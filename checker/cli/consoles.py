"""The rich console every command prints through: output that survives a pipe.

rich draws at 80 columns when stdout is not a terminal, so in a CI log ``check --all``'s
cells became ``vi…`` and ``variants`` split names and URLs over lines. Off a terminal the
console is as wide as the content (a table takes its natural width, a line is never wrapped),
unless ``COLUMNS`` is set, which rich then follows (``checker/report/tables.py`` keeps names,
numbers and URLs whole even then).
"""

from __future__ import annotations

import os
from typing import Any

# Wide enough for any table kvproof draws; lines are as long as their content, no longer.
PIPE_WIDTH = 4096


def console_for(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console
