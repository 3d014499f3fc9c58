"""The liveness search's own lassos replay on the engine (issue #29): a stutter (an empty
loop, the run staying in its last state with no fair step) needs the engine's ``crash``
(E20), and an engine that can take a step the model forbids diverges."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kvproof.checker.verify.liveness import check_liveness
from kvproof.checker.verify.protocols import protocol_for
from kvproof.spec.variant import load_variant

VARIANT = "sglang-pd-quarantine"


@pytest.fixture(scope="module")
def lasso() -> Any:
    variant = load_variant(VARIANT)
    protocol = protocol_for(variant, liveness=True)
    check = check_liveness(variant, protocol, names=("answered",), necessity=False)
    (result,) = check.result.results
    assert result.trace is not None and "crash" in [s.action for s in result.trace.steps]
    assert result.trace.loop == len(result.trace.steps)  # the search's stutter
    return result.trace


@pytest.mark.slow  # torch: the engine
def test_the_quarantine_lasso_repeats_on_the_engine(lasso: Any) -> None:
    from kvproof.checker.conformance.replay import replay_trace

    report = replay_trace(lasso, load_variant(VARIANT), loops=2)
    assert report.divergence is None, report.divergence
    assert report.lasso is not None and report.lasso.repeats and report.exit_code == 1
    assert report.lasso.forever == ("request r0 is never answered",)


def _dead_prefill_acks(variant: Any, **kw: Any) -> Any:
    """An engine whose dead prefill still ACKs a drained room (``ack`` ignores ``crash``)."""
    from kvproof.refimpl.cluster import Cluster

    c = Cluster(variant, **kw)

    def guard(ctx: Any, f: Any, ev: Any) -> bool:
        drained = f.d.phase == "draining" and not ctx.inflight(f)
        return drained and f.p.phase not in ("waiting", "active")

    rules = c.handoff.rules
    rules["ack"] = dataclasses.replace(rules["ack"], guard=guard)
    return c


@pytest.mark.slow  # torch: the engine
def test_an_engine_that_can_still_move_diverges_from_a_stutter(lasso: Any) -> None:
    from kvproof.checker.conformance.replay import replay_trace

    report = replay_trace(lasso, load_variant(VARIANT), loops=2, engine=_dead_prefill_acks)
    d = report.divergence  # the lockstep's check after every step, the last one included
    assert d is not None and d.step == len(lasso.steps) and "could perform ack(1)" in d.reason
    assert not report.lasso.repeats and report.exit_code == 1


def test_a_stutter_lasso_file_round_trips(lasso: Any, tmp_path: Any) -> None:
    from kvproof.checker.traces.itf import read_itf, write_itf
    from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
    from kvproof.model.handoff import protocol_of

    protocol = protocol_of(load_variant(VARIANT), liveness=True)
    write_jsonl(lasso, tmp_path / "t.jsonl", protocol=protocol)
    write_itf(lasso, tmp_path / "t.itf.json", protocol)
    for back in (read_jsonl(tmp_path / "t.jsonl"), read_itf(tmp_path / "t.itf.json", protocol)):
        assert back.loop == len(back.steps) == len(lasso.steps)
        assert [s.action for s in back.steps] == [s.action for s in lasso.steps]
