"""A conform matrix as plain data, whatever the engine: cells (a variant on a release, under
a setting), the run or the refusal of each, and the two tables ``docs/conform.md`` shows
(``release_table``, ``markdown``), regenerated from the runs. An engine's adapter fills it
(``checker/upstream/matrix.py::conform_all`` for SGLang).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.checker.conform.result import ConformRun


@dataclass(frozen=True)
class Cell:
    variant: str
    release: str
    env: tuple[tuple[str, Any], ...]  # over the variant's [upstream.env]
    column: str  # "listed" or the cross column's name
    run: ConformRun | None = None
    error: str | None = None  # bad input (a release with no adapter): one line

    @property
    def mark(self) -> str:
        if self.error is not None:
            return "refused"
        assert self.run is not None
        if not self.run.diverged:
            return "ok"
        if self.run.raised is not None:
            return "raised"
        return self.run.switch or "unexplained"


@dataclass(frozen=True)
class ConformMatrix:
    cells: tuple[Cell, ...]
    seconds: float
    traces: int

    @property
    def exit_code(self) -> int:
        """1 when a listed release does not conform to its variant (its table is wrong)."""
        return 1 if any(c.column == "listed" and c.mark != "ok" for c in self.cells) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "traces": self.traces,
            "seconds": round(self.seconds, 2),
            "cells": [
                {
                    "variant": c.variant,
                    "release": c.release,
                    "column": c.column,
                    "env": dict(c.env),
                    "mark": c.mark,
                    "error": c.error,
                    "run": c.run.to_json() if c.run else None,
                }
                for c in self.cells
            ],
            "release_table": release_table(self),
            "exit_code": self.exit_code,
        }


def release_table(m: ConformMatrix) -> dict[str, list[str]]:
    """Release -> the variants whose listed cell conforms there."""
    table: dict[str, list[str]] = {}
    for c in m.cells:
        if c.column == "listed" and c.mark == "ok":
            table.setdefault(c.release, []).append(c.variant)
    return {r: sorted(vs) for r, vs in sorted(table.items())}


def markdown(m: ConformMatrix) -> str:
    """The two tables docs/conform.md shows: release -> variants, then every cell."""
    lines = ["| release | conforming variants (listed in their `[upstream]`) |", "| --- | --- |"]
    for release, names in release_table(m).items():
        lines.append(f"| {release} | {', '.join(f'`{n}`' for n in names)} |")
    columns = [c.column for c in m.cells if c.column != "listed"]
    columns = list(dict.fromkeys(columns))
    lines += ["", "| variant | " + " | ".join(columns) + " | `[upstream]` |"]
    lines.append("| --- |" + " --- |" * (len(columns) + 1))
    by_variant: dict[str, dict[str, str]] = {}
    listed: dict[str, list[str]] = {}
    for c in m.cells:
        if c.column == "listed":
            listed.setdefault(c.variant, []).append(
                c.release + ("" if c.mark == "ok" else f" ({c.mark})")
            )
        else:
            mark = "**ok**" if c.mark == "ok" else f"`{c.mark}`"
            by_variant.setdefault(c.variant, {})[c.column] = mark
    for name, row in by_variant.items():
        marks = " | ".join(row.get(col, "") for col in columns)
        lines.append(f"| `{name}` | {marks} | {', '.join(listed.get(name, [])) or 'exempt'} |")
    return "\n".join(lines)
