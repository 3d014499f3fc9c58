"""``fuzz`` plans its batches lazily (issue 41): ``--traces 1000000000`` once built ten
million batches and their units, 3.8 GB, before its first walk. Now a unit is made when a
slot asks for one, so memory does not grow with the budget."""

from __future__ import annotations

import itertools
import tracemalloc
from typing import Any

import pytest

from kvproof.checker.conformance import fuzz as fuzz_mod
from kvproof.checker.distrib.executor import SerialExecutor, Unit, ordered
from kvproof.spec.variant import load_variant


class Stop(Exception):
    pass


def test_batches_are_made_as_asked() -> None:
    assert fuzz_mod._nth_batch(10**9, 0) == 100
    assert [fuzz_mod._nth_batch(250, i) for i in range(6)] == [62, 62, 62, 62, 2, None]
    for budget in (5, 10, 250, 1234):
        sizes = [n for i in range(budget + 2) if (n := fuzz_mod._nth_batch(budget, i))]
        assert sum(sizes) == budget
        assert fuzz_mod._nth_batch(budget, len(sizes)) is None


def test_ordered_reads_an_endless_stream_of_units() -> None:
    def endless() -> Any:
        for i in itertools.count():
            assert i < 50, "ordered read the units ahead of the work"
            yield Unit(i, int, (i,))

    units = endless()
    got = list(itertools.islice(ordered(SerialExecutor(), units), 5))
    assert got == [(i, i) for i in range(5)]


def test_ordered_keeps_a_resumed_campaigns_results_in_order() -> None:
    units = (Unit(i, int, (i,)) for i in range(6))
    done = {0: "held0", 3: "held3"}
    got = list(ordered(SerialExecutor(), units, done=done))
    assert got == [(0, "held0"), (1, 1), (2, 2), (3, "held3"), (4, 4), (5, 5)]
    # a held result that stops the run: nothing after it starts
    started: list[int] = []

    def run(i: int) -> int:
        started.append(i)
        return i

    units = (Unit(i, run, (i,)) for i in range(6))
    got = list(ordered(SerialExecutor(), units, done={2: "stop"}, stops=lambda r: r == "stop"))
    assert got == [(0, 0), (1, 1), (2, "stop")] and started == [0, 1]


def test_a_billion_walk_budget_starts_at_once_in_bounded_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The campaign's own bookkeeping for ``traces=10**9``: the walks are stood in for (each
    batch reports its walks done, clean), three batches run, then the run is interrupted."""
    ran: list[int] = []

    def batch(variant: Any, n: int, seed: int, **_: Any) -> tuple[Any, None]:
        ran.append(n)
        return fuzz_mod.FuzzStats(traces=n), None

    def on_batch(_: Any) -> None:
        if len(ran) >= 3:
            raise Stop

    monkeypatch.setattr(fuzz_mod, "search_batch", batch)
    tracemalloc.start()
    try:
        with pytest.raises(Stop):
            fuzz_mod.fuzz(load_variant("sglang-0.5.22-pd"), traces=10**9, on_batch=on_batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ran == [100, 100, 100]
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB for three batches' bookkeeping"
