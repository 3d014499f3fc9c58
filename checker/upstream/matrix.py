"""``kvproof conform --all``: every SGLang variant against every release its ``[upstream]``
lists, plus the cross cells (each variant on each adapter group's newest release, under
the release's default environment and with deferred release set the other way), as one
``ConformMatrix`` (``checker/conform/matrix.py``, whose tables ``docs/conform.md`` shows,
regenerated from the runs rather than written by hand).

Cells run as units on the local pool or Ray (``checker/distrib/``); each is a whole
``conform`` run in its worker (the release's modules load there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kvproof.checker.conform.matrix import Cell, ConformMatrix, markdown, release_table
from kvproof.spec.variant import Variant, list_variants

__all__ = ["Cell", "ConformMatrix", "conform_all", "markdown", "release_table"]

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"
# The newest release of each adapter group, and its deferred-release default (srt/environ.py).
GROUPS = (
    ("0.5.18", "0.5.15-0.5.18", False),
    ("0.5.19", "0.5.19, 0.5.20", False),
    ("0.5.22", "0.5.21-0.5.23", True),
)


def sglang_variants() -> list[Variant]:
    return [v for v in list_variants() if v.engine == "sglang"]


def cells() -> Iterator[Cell]:
    for v in sglang_variants():
        table = v.upstream
        for release in table.releases if table else ():
            yield Cell(v.name, release, (), "listed")
        for release, group, default in GROUPS:
            # The release's default, over any [upstream.env] the variant sets.
            yield Cell(v.name, release, ((DEFERRED, default),), f"{group} default")
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
