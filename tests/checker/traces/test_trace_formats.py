"""JSONL and ITF traces: round trips, strict parsing with line numbers, the stored corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.traces.corpus import TRACES_DIR, load
from kvproof.checker.traces.itf import PICKS_KEY, read_itf, write_itf
from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
from kvproof.model.handoff import build_handoff
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import list_variants, load_variant

INCIDENT = TRACES_DIR / "sglang-0.5.19-pd.isolation.jsonl"


def protocol_of(trace):  # type: ignore[no-untyped-def]
    return build_handoff(load_variant(trace.variant).switches)


def test_jsonl_round_trip(tmp_path: Path) -> None:
    trace = read_jsonl(INCIDENT)
    out = tmp_path / "t.jsonl"
    write_jsonl(trace, out, protocol=protocol_of(trace))
    again = read_jsonl(out)
    assert again.steps == trace.steps and again.init == trace.init
    assert again.variant == trace.variant and again.violated == "isolation"
    header = json.loads(out.read_text().splitlines()[0])
    assert header["kvproof_trace"] == 1 and "kvproof_version" in header
    step = json.loads(out.read_text().splitlines()[2])
    assert step["action"] == "alloc" and step["args"] == {"r": 0, "p": 0} and "state" in step


def test_itf_round_trip_and_inference(tmp_path: Path) -> None:
    trace = read_jsonl(INCIDENT)
    proto = protocol_of(trace)
    out = tmp_path / "t.itf.json"
    write_itf(trace, out, proto)
    doc = json.loads(out.read_text())
    assert doc["vars"][0] == "over_p" and doc["states"][1]["mbt::actionTaken"] == "arrive"
    assert doc["states"][2]["mbt::nondetPicks"] == {"r": {"#bigint": "0"}, "p": {"#bigint": "0"}}
    assert "#map" in doc["states"][0]["owns"]
    assert read_itf(out, proto).steps == trace.steps
    for st in doc["states"]:  # a plain Apalache trace: no mbt:: keys, actions inferred
        st.pop("mbt::actionTaken")
        st.pop("mbt::nondetPicks")
    out.write_text(json.dumps(doc))
    assert len(read_itf(out, proto).steps) == len(trace.steps)


@pytest.mark.parametrize(
    ("line", "text", "message"),
    [
        (1, '{"kvproof_trace": 2}', "unsupported trace format"),
        (2, '{"step": 1, "action": "arrive", "args": {"r": 0}', "malformed JSON"),
        (2, '{"step": 3, "action": "arrive", "args": {"r": 0}}', "'step' must be 1"),
        (2, '{"step": 1, "action": "arrive", "args": {"r": -1}}', "non-negative"),
        (2, '{"step": 1, "action": "arrive", "args": {}, "x": 1}', "unknown step key"),
    ],
)
def test_strict_parsing_names_the_line(tmp_path: Path, line: int, text: str, message: str) -> None:
    lines = INCIDENT.read_text().splitlines()[:2]
    lines[line - 1] = text
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(KvproofInputError) as exc:
        read_jsonl(bad)
    assert exc.value.where == f"{bad}:{line}" and message in exc.value.message


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("#meta", lambda d: d.update({"#meta": ["not", "an", "object"]})),
        ("#meta.sizes", lambda d: d["#meta"].update(sizes=[2, 2])),
        ("states[0].owns", lambda d: d["states"][0]["owns"].update({"#map": 3})),
        ("states[0].owns", lambda d: d["states"][0].update(owns={"#set": {"a": 1}})),
        ("states[0].over_p", lambda d: d["states"][0].update(over_p=True)),  # wrong arity
        ("states[2].mbt::nondetPicks", lambda d: d["states"][2].update({PICKS_KEY: ["r"]})),
    ],
)
def test_itf_of_the_wrong_json_types_is_exit_2_with_one_line(
    tmp_path: Path, where: str, edit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = read_jsonl(INCIDENT)
    bad = tmp_path / "bad.itf.json"
    write_itf(trace, bad, protocol_of(trace))
    doc = json.loads(bad.read_text())
    edit(doc)
    bad.write_text(json.dumps(doc))
    assert main(["replay", str(bad), "--variant", trace.variant, "--no-drain"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}: {where}:" in err[0]


def test_every_stored_trace_replays_in_its_model() -> None:
    traces = load()
    buggy = {v.name for v in list_variants() if v.buggy}
    assert {t.variant for t in traces.values()} == buggy  # every buggy variant has one
    for name, trace in traces.items():
        states = replay(trace, Concrete(Instance(protocol_of(trace), trace.sizes)))
        assert trace.violated in Concrete(Instance(protocol_of(trace), trace.sizes)).violated(
            states[-1]
        ), name
