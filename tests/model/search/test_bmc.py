"""BMC: shortest counterexamples that replay, and the incident's exact shape."""

from __future__ import annotations

import json

import pytest

from kvproof.checker.cli import main
from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace, replay
from kvproof.model.search.bmc import bmc
from kvproof.spec.variant import load_variant

SIZES = {"Req": 2, "Page": 3}


def _run(name: str, depth: int = 9):  # type: ignore[no-untyped-def]
    variant = load_variant(name)
    protocol = protocol_of(variant)  # under the variant's assumptions
    return protocol, bmc(protocol, SIZES, depth, variant=name)


def test_incident_counterexample_replays_and_tells_the_story() -> None:
    protocol, result = _run("sglang-0.5.19-pd")
    iso = result.result("isolation")
    # 7 steps: the placeholder's single page is enough (its leftover slots, issue 12).
    assert not iso.holds and iso.primary and iso.shortest == 7
    concrete = Concrete(Instance(protocol, SIZES))
    states = replay(iso.trace, concrete)
    actions = [s.action for s in iso.trace.steps]
    assert actions[0] == "arrive" and actions[-1] == "commit" and "done" in actions
    (r,) = {s.args[0] for s in iso.trace.steps}
    last = states[-1]
    # The rejected request (over prefill's limit) got a 200 ...
    assert iso.trace.init["over_p"][(r,)] is True
    assert concrete.value(last, "resp", (r,)) == "ok"
    # ... and reads a page whose bytes are not its own in every slot: the placeholder
    # wrote one slot, the others are prefill's leftovers (at_pos false).
    stale = [
        p
        for p in range(SIZES["Page"])
        if concrete.value(last, "owns", (r, p))
        and not (concrete.value(last, "holds", (p, r)) and concrete.value(last, "at_pos", (p,)))
    ]
    assert stale
    assert not result.result("reject_final").holds
    assert result.result("one_owner").holds


def test_fixed_variant_holds() -> None:
    _, result = _run("sglang-0.5.22-pd", depth=10)
    assert result.holds


def test_shortest_means_none_shorter() -> None:
    protocol, result = _run("sglang-0.5.19-pd")
    stray = result.result("no_stray_write")
    assert stray.shortest == 6
    _, shallow = (protocol, bmc(protocol, SIZES, 5, invariants=["no_stray_write"]))
    assert shallow.result("no_stray_write").holds


@pytest.mark.slow
def test_primary_trace_avoids_earlier_violations() -> None:
    protocol, result = _run("sglang-pd-early-free-abort", depth=13)
    iso = result.result("isolation")
    assert not iso.holds and iso.shortest == 13 and not iso.primary
    concrete = Concrete(Instance(protocol, SIZES))
    states = replay(iso.trace, concrete)
    assert "no_stray_write" in concrete.violated(states[-2])


def test_replay_rejects_a_trace_that_is_not_a_run() -> None:
    protocol = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    concrete = Concrete(Instance(protocol, SIZES))
    bogus = Trace("x", SIZES, {}, (ActionInstance("commit", (0,)),))
    with pytest.raises(ReplayError, match="step 1"):
        replay(bogus, concrete)


@pytest.mark.slow
def test_check_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "sglang-0.5.19-pd", "--json", "--requests", "2", "--pages", "3"])
    assert code == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "violated" and data["matches_expectation"]
    iso = next(i for i in data["invariants"] if i["name"] == "isolation")
    assert iso["trace"][-1]["action"] == "commit"
    assert "200" in iso["explanation"] and "earlier request" in iso["explanation"]
    code = main(
        ["check", "sglang-0.5.22-pd", "--depth", "8", "--json", "--requests", "2", "--pages", "3"]
    )
    assert code == 0


def test_check_out_writes_every_trace_in_both_formats(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kvproof.checker.traces.itf import read_itf
    from kvproof.checker.traces.tracefile import read_jsonl

    code = main(
        ["check", "sglang-0.5.19-pd", "--requests", "2", "--pages", "3", "--out", str(tmp_path)]
    )
    assert code == 1
    protocol = build_handoff(load_variant("sglang-0.5.19-pd").switches)
    concrete = Concrete(Instance(protocol, SIZES))
    for inv in ("isolation", "no_stray_write", "reject_final"):
        a = read_jsonl(tmp_path / f"sglang-0.5.19-pd.{inv}.jsonl")
        b = read_itf(tmp_path / f"sglang-0.5.19-pd.{inv}.itf.json", protocol)
        assert a.steps == b.steps and a.violated == inv
        states = replay(a, concrete)
        assert inv in concrete.violated(states[-1])


def test_check_never_imports_torch() -> None:
    """DESIGN: the model path starts fast; `kvproof check` must not load torch."""
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "from kvproof.checker.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['check', 'sglang-0.5.19-pd', '--requests', '2', '--pages', '2',"
        " '--depth', '8'])\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
