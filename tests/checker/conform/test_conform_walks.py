"""What conform's default walks deliver (issue 39: every kind of event in the default run,
commits under faults included), and the late ABORT_ACK (``stale_ack``): delivered through
the release's own ACK parsing, and checked against ``ack_generation``.

Counts come from a seeded run (the walks and the harness's clock are deterministic), never
from time. Runs on the cached wheels; skips with the reason when one is unavailable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from release_copy import copy_release, tree

from kvproof.checker.upstream.run import conform
from kvproof.spec.variant import load_variant

CONN = Path("sglang/srt/disaggregation/common/conn.py")


def test_default_walks_commit_and_go_on_after_the_commit() -> None:
    """Before the guide aimed at the rarest transition (and steered by the request's
    local state), 200 walks on 0.5.22 made 3 commits and 1 finish."""
    tree("0.5.22")
    run = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=200, seed=0)
    assert run.exit_code == 0 and run.faults
    ev = run.events
    assert ev.get("commit", 0) >= run.walks // 10, ev  # measured 37
    assert ev.get("step", 0) >= 5 and ev.get("finish", 0) >= 5, ev  # measured 17, 19
    assert run.decisions["committed"] == ev["commit"]
    assert run.trivial <= run.walks // 10
    assert run.coverage is not None and run.coverage.ratio >= 0.9, run.coverage.missing


def test_default_walks_deliver_late_acks_in_every_phase_they_can() -> None:
    tree("0.5.22")
    run = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=200, seed=0)
    assert run.events.get("stale_ack", 0) > 0, run.events
    assert run.coverage is not None
    late = {m for m in run.coverage.missing if m.startswith("stale_ack")}
    assert not late  # in transfer, and while held with writes in flight or drained


def test_an_ack_counted_whatever_its_generation_is_caught(tmp_path: Path) -> None:
    """The mutant of ``benchmarks/conform_mutants.py``: ``note_abort_ack`` without its
    generation check. The late ACK frees a held request; the model of 0.5.22 holds it."""
    dest = copy_release("0.5.22", tmp_path / "python")
    conn = dest / CONN
    old = "if state is not None and state.generation == generation:"
    assert conn.read_text().count(old) == 1
    conn.write_text(conn.read_text().replace(old, "if state is not None:"))
    run = conform(load_variant("sglang-0.5.22-pd"), str(dest), traces=200, seed=0)
    assert run.exit_code == 1 and run.switch == "ack_generation", run.detail
    assert run.diagnosis is not None
    assert ("ack_generation", "unchecked") in run.diagnosis.explained_by
    assert "late ABORT_ACK" in run.diagnosis.headline


def test_0_5_21_counts_a_late_ack_as_its_code_says() -> None:
    """0.5.21's ``note_abort_ack(bootstrap_room, prefill_rank)`` has no generation: it
    diverges from sglang-0.5.22-pd exactly on ``ack_generation``."""
    tree("0.5.21")
    run = conform(load_variant("sglang-0.5.22-pd"), "0.5.21", traces=200, seed=0)
    assert run.exit_code == 1 and run.switch == "ack_generation", run.detail


@pytest.mark.slow
def test_0_5_21_conforms_to_its_own_variant() -> None:
    # The first run searches the unchecked model's reachable states (about 1M; cached after).
    tree("0.5.21")
    run = conform(load_variant("sglang-0.5.21-pd"), "0.5.21", traces=200, seed=0)
    assert run.exit_code == 0, run.diagnosis
    assert run.events.get("stale_ack", 0) > 0
