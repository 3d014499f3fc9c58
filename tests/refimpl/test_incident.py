from __future__ import annotations

import dataclasses
import json

from kvproof.checker.cli import main
from kvproof.refimpl.incident import CANARIES, run_incident
from kvproof.spec.variant import load_variant


def test_buggy_variant_leaks_the_other_tenants_canary() -> None:
    report = run_incident(load_variant("sglang-0.5.19-pd"))
    assert report.exit_code == 1
    long_row = report.rows[-1]
    assert long_row.status == 200
    assert CANARIES["B"] in long_row.text
    (leak,) = report.leaks
    assert leak.foreign_canaries == ("B",) and not leak.tokens_match
    assert {s.writer_tenant for s in leak.stale_pages} >= {"B", None}


def test_fixed_variant_returns_the_original_400() -> None:
    report = run_incident(load_variant("sglang-0.5.22-pd"))
    assert report.exit_code == 0
    assert report.rows[-1].status == 400
    assert report.stale_reads == 0
    assert [r.status for r in report.rows[:2]] == [200, 200]


def test_each_guard_alone_turns_the_leak_into_a_500() -> None:
    buggy = load_variant("sglang-0.5.19-pd")
    for switch, on in (
        ("written_length_check", True),
        ("transfer_checksum", "both"),
        ("page_tags", True),
    ):
        sw = dataclasses.replace(buggy.switches, **{switch: on})
        report = run_incident(dataclasses.replace(buggy, switches=sw))
        assert report.exit_code == 0, switch
        assert report.rows[-1].status == 500, switch


def test_a_checksum_on_one_role_only_checks_nothing() -> None:
    """#39500: decode skips the comparison when the checksum it received is 0."""
    buggy = load_variant("sglang-0.5.19-pd")
    for side in ("decode_only", "prefill_only"):
        sw = dataclasses.replace(buggy.switches, transfer_checksum=side)
        report = run_incident(dataclasses.replace(buggy, switches=sw))
        assert report.exit_code == 1, side
        assert report.rows[-1].status == 200, side


def test_cli_demo_exit_codes_and_json(capsys) -> None:  # type: ignore[no-untyped-def]
    # The main job: the leak on 0.5.19 is what the variant predicts, so exit 0 (issue 41).
    assert main(["demo", "incident", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["leak"] is True and out["responses"][-1]["oracle"]["foreign_canaries"] == ["B"]
    assert (out["outcome"], out["expected"], out["matches_expectation"]) == ("leak", "leak", True)
    # A checking run: any leak is a finding.
    assert main(["demo", "incident", "--expect", "clean"]) == 1
    assert "NOT as expected" in capsys.readouterr().out
    assert main(["demo", "incident", "--variant", "sglang-0.5.22-pd"]) == 0
    assert main(["demo", "incident", "--variant", "sglang-0.5.22-pd", "--expect", "clean"]) == 0
    assert main(["demo", "incident", "--variant", "no-such"]) == 2


def test_demo_is_held_to_the_variants_prediction(capsys) -> None:  # type: ignore[no-untyped-def]
    """A variant that predicts a leak but runs clean is a finding: change the prediction."""
    import dataclasses as dc

    from kvproof.checker.runs.demo_run import DemoRun

    fixed = run_incident(load_variant("sglang-0.5.22-pd"))
    assert DemoRun(fixed, expected="clean").exit_code == 0
    assert DemoRun(fixed, expected="leak").exit_code == 1
    leaky = run_incident(load_variant("sglang-0.5.19-pd"))
    assert DemoRun(leaky, expected="leak").outcome == "leak"
    assert dc.replace(DemoRun(leaky), expected="clean").exit_code == 1
