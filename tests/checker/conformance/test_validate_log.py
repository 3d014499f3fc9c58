"""Trace validation of engine event logs against the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conformance.validate import read_event_log, validate_log, write_event_log
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Sizes, load_variant

SIZES = Sizes(context_len=128, prefill_pool_tokens=64, decode_pool_tokens=128, page_size=8)


def engine_log(name: str, path: Path) -> Path:
    c = Cluster(load_variant(name), sizes=SIZES, seed=1)
    for i in range(4):
        c.submit("t", "x" * (10 + 20 * i), 4)  # the last one is over prefill's limit
    c.run()
    write_event_log(c, path)
    return path


@pytest.mark.parametrize("name", ["sglang-0.5.19-pd", "sglang-0.5.22-pd"])
def test_engine_log_is_a_run_of_its_own_model(name: str, tmp_path: Path) -> None:
    report = validate_log(
        read_event_log(engine_log(name, tmp_path / "log.jsonl")), load_variant(name)
    )
    assert report.first_bad is None and report.checked == report.events
    # 0.5.19 answers the over-long prompt with 200: every consistent state violates these.
    expect = {"isolation", "reject_final"} if name == "sglang-0.5.19-pd" else set()
    assert {inv for _, inv in report.violations} == expect


def test_first_event_not_enabled_is_reported(tmp_path: Path) -> None:
    log = engine_log("sglang-0.5.19-pd", tmp_path / "log.jsonl")
    report = validate_log(read_event_log(log), load_variant("sglang-0.5.22-pd"))
    assert report.first_bad is not None and report.first_bad.action.action == "alloc"
    assert "resp(r3) = rejected" in report.context[0]


def test_open_admission_verdicts(tmp_path: Path) -> None:
    log = engine_log("sglang-0.5.22-pd", tmp_path / "log.jsonl")
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    for row in rows[1:]:
        row.pop("over_p", None)
        row.pop("over_d", None)
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = validate_log(read_event_log(log), load_variant("sglang-0.5.22-pd"))
    assert report.first_bad is None and report.candidates >= 1


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = engine_log("sglang-0.5.19-pd", tmp_path / "log.jsonl")
    assert main(["validate", str(log), "--variant", "sglang-0.5.22-pd"]) == 1
    assert "NOT ENABLED" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kvproof_log": 1}\n{"event": "alloc", "rid": 0}\n')
    with pytest.raises(KvproofInputError, match="needs 'page'"):
        read_event_log(bad)
    assert main(["validate", str(bad), "--variant", "sglang-0.5.22-pd"]) == 2
