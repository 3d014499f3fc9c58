"""``kvproof conform --all``: every SGLang variant against every release its ``[upstream]``
lists, plus the cross cells (each variant on each adapter group's newest release, under
the release's default environment and with deferred release set the other way), as one
``ConformMatrix``. Its tables (``release_table``, ``cell_table``) are what
``docs/conform.md`` shows, regenerated from the runs rather than written by hand.

Cells run as units on the local pool or Ray (``checker/distrib/``); each is a whole
``conform`` run in its worker (the release's modules load there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.checker.conform.result import ConformRun
from kvproof.spec.variant import Variant, list_variants

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"
# The newest release of each adapter group, and its deferred-release default (srt/environ.py).
GROUPS = (
    ("0.5.18", "0.5.15-0.5.18", False),
    ("0.5.19", "0.5.19, 0.5.20", False),
    ("0.5.22", "0.5.21-0.5.23", True),
)


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


def sglang_variants() -> list[Variant]:
    return [v for v in list_variants() if v.engine == "sglang"]


def cells() -> Iterator[Cell]:
    for v in sglang_variants():
        table = v.upstream
        for release in table.releases if table else ():
            yield Cell(v.name, release, (), "listed")
        for release, group, default in GROUPS:
            yield Cell(v.name, release, (), f"{group} default")
            yield Cell(
                v.name,
                release,
                ((DEFERRED, not default),),
                f"{group} deferred {'off' if default else 'on'}",
            )


def run_cell(cell: Cell, traces: int, seed: int) -> Cell:
    """One cell, in a worker: bad input (no adapter for the release) is the cell's answer."""
    from dataclasses import replace

    from kvproof.checker.upstream.run import conform
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    try:
        run = conform(load_variant(cell.variant), cell.release, traces=traces, seed=seed,
                      env=dict(cell.env) or None)  # fmt: skip
    except KvproofInputError as exc:
        return replace(cell, error=str(exc))
    return replace(cell, run=run)


def conform_all(
    traces: int, seed: int, executor: Any, done: Callable[[Cell], None] | None = None
) -> ConformMatrix:
    import time

    from kvproof.checker.distrib.executor import Unit

    start = time.perf_counter()
    todo = list(cells())
    units = [Unit(i, run_cell, (c, traces, seed)) for i, c in enumerate(todo)]
    out: dict[int, Cell] = {}
    for i, cell in executor.imap(units):
        out[i] = cell
        if done is not None:
            done(cell)
    return ConformMatrix(
        tuple(out[i] for i in range(len(todo))), time.perf_counter() - start, traces
    )


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
