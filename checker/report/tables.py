"""Console output that never cuts a word: tables, and the ``wrote PATH`` lines.

Tables: names, numbers and URLs stay whole at any width.

rich shrinks a table that is wider than the console by folding or ellipsising cells
(``sglang-0.5.19-p`` / ``d``, ``21.…``). When every cell's longest word fits, rich draws it
(wrapping only between words); when not (a narrow ``COLUMNS`` in a pipe), the table is
printed as plain aligned lines, each as long as it needs. A terminal keeps rich's drawing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def print_table(console: Any, table: Any) -> None:
    """``table`` in rich when every cell's longest word fits the width, else plain lines."""
    from rich.measure import Measurement

    # measured unclamped: Measurement.get caps the minimum at the width it is given
    least = Measurement.get(console, console.options.update(max_width=10**6), table).minimum
    if console.is_terminal or least <= console.width:
        if not console.is_terminal:
            _keep_words_whole(table)
        console.print(table)
        return
    if table.title:
        console.print(_plain(table.title), highlight=False, markup=False, soft_wrap=True)
    cells = zip(*(c.cells for c in table.columns), strict=True)
    text = [[_plain(cell) for cell in row] for row in [[c.header for c in table.columns], *cells]]
    widths = [max(len(row[i]) for row in text) for i in range(len(table.columns))]
    for row in text:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _plain(cell: Any) -> str:
    from rich.text import Text

    if isinstance(cell, str):
        cell = Text.from_markup(cell)
    if isinstance(cell, Text):
        return " ".join(cell.plain.split())
    return " ".join(str(cell).split())


def _keep_words_whole(table: Any) -> None:
    """Each column at least as wide as its longest word: rich shrinks every column in
    proportion when the table is too wide, and would cut a URL (``…``) that fits whole
    once a neighbour wraps between its words instead."""
    for column in table.columns:
        words = [w for cell in (column.header, *column.cells) for w in _plain(cell).split()]
        longest = max((len(w) for w in words), default=0)
        column.min_width = max(column.min_width or 0, longest)


def wrote(console: Any, paths: Iterable[Path | str]) -> None:
    """Every command that writes a file says so: one line a file, ``wrote PATH``. On stdout
    for people; a command run with ``--json`` passes a stderr console (its stdout is the
    JSON, which lists the files itself where it has a place for them)."""
    for path in paths:
        # soft_wrap: a long path stays on one line, whole, in a pipe too
        console.print(f"wrote {path}", highlight=False, soft_wrap=True, markup=False)
