"""The rich console every command prints through: output that survives a pipe.

rich draws at 80 columns when stdout is not a terminal, so in a CI log ``check --all``'s
cells became ``vi…`` and ``variants`` split names and URLs over lines. Off a terminal the
console is ``PIPE_WIDTH`` wide unless ``COLUMNS`` is set, which rich then follows;
``checker/report/tables.py`` keeps names, numbers and URLs whole at either width.

Off a terminal every renderable is also drawn only as wide as its content: a panel or a
rule would otherwise stretch to the console's width, and at the 4,096 columns this module
once used, ``kvproof audit > a.txt`` wrote 4,096-character lines of padding (issue 41).
"""

from __future__ import annotations

import os
from typing import Any

# A CI log's width: prose wraps here, tables wrap between words (never inside one), and
# no line is longer than its content or this width (tests/checker/cli/test_pipe_widths.py).
PIPE_WIDTH = 120


def console_for(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    if os.environ.get("COLUMNS"):
        return _fitted(Console)(stderr=stderr)
    return _fitted(Console)(stderr=stderr, width=PIPE_WIDTH)


def _fitted(base: type) -> type:
    """A console whose ``print`` draws one renderable at its content's width."""
    from rich.measure import Measurement

    class FittedConsole(base):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            if len(objects) == 1 and not isinstance(objects[0], str) and "width" not in kwargs:
                need = Measurement.get(self, self.options, objects[0]).maximum
                kwargs["width"] = max(1, min(need, self.width))
            super().print(*objects, **kwargs)

    return FittedConsole
