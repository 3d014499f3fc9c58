"""A trace checked against a variant outside the catalog carries it (``checker/traces/
carried_variant.py``), so ``report --html`` and ``replay`` draw it; a catalog variant's
trace carries nothing. No engine: the traces are the model's own."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.traces.carried_variant import (
    SWITCHES_KEY,
    TOML_KEY,
    carried,
    trace_variant,
)
from kvproof.checker.traces.itf import write_itf
from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, initial_assignment
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

NAME = "my-push-until-read"


def _own_variant(tmp_path: Path):
    """vLLM 0.34.0's push variant with one claim changed, under a name the catalog lacks."""
    text = load_variant("vllm-0.34-nixl-push").path.read_text()
    text = text.replace('prefill_hold = "lease"', 'prefill_hold = "until_read"')
    path = tmp_path / f"{NAME}.toml"
    path.write_text(text.replace('name = "vllm-0.34-nixl-push"', f'name = "{NAME}"'))
    return load_variant(str(path))


def _trace(variant, meta: dict) -> tuple[Trace, object]:
    protocol = protocol_of(variant, assumed=False)
    concrete = Concrete(Instance(protocol, {"Req": 2, "Page": 2}))
    init = next(iter(concrete.initial_states()))
    inst, _ = next(iter(concrete.successors(init)))
    trace = Trace(
        variant.name, {"Req": 2, "Page": 2}, initial_assignment(concrete, init), (inst,), None, meta
    )
    return trace, protocol


def test_a_catalog_variant_carries_nothing() -> None:
    assert carried(load_variant("vllm-0.34-nixl-push")) == {}


def test_a_catalog_variant_changed_in_memory_carries_its_switches() -> None:
    base = load_variant("vllm-0.34-nixl-push")
    sw = dataclasses.replace(base.switches, prefill_hold="until_read")
    meta = carried(dataclasses.replace(base, switches=sw))
    assert meta[SWITCHES_KEY]["prefill_hold"] == "until_read"
    back = trace_variant(base.name, meta, "t.jsonl")
    assert back.switches == sw and back.name == base.name


def test_an_own_variant_travels_with_its_trace(tmp_path: Path) -> None:
    variant = _own_variant(tmp_path)
    meta = {"finding": "divergence", "source": "conform against vllm 0.34.0", "diagnosis": "d"}
    trace, protocol = _trace(variant, {**meta, **carried(variant)})
    jsonl, itf = tmp_path / "t.jsonl", tmp_path / "t.itf.json"
    write_jsonl(trace, jsonl, protocol=protocol)
    write_itf(trace, itf, protocol)
    (tmp_path / f"{NAME}.toml").unlink()  # the reader has the trace only
    back = trace_variant(NAME, read_jsonl(jsonl).meta, str(jsonl))
    assert back.switches == variant.switches and back.switches.prefill_hold == "until_read"
    for path in (jsonl, itf):
        html = tmp_path / f"{path.name}.html"
        assert main(["report", str(path), "--html", str(html), "--no-replay"]) == 0
        assert NAME in html.read_text()
    # The JSON Lines header keeps the whole finding (ITF's #meta only the variant).
    assert "DIVERGES after step 1" in (tmp_path / "t.jsonl.html").read_text()


def test_without_the_variant_the_trace_is_bad_input(tmp_path: Path) -> None:
    variant = _own_variant(tmp_path)
    trace, protocol = _trace(variant, {})
    jsonl = tmp_path / "t.jsonl"
    write_jsonl(trace, jsonl, protocol=protocol)
    assert main(["report", str(jsonl), "--html", str(tmp_path / "x.html"), "--no-replay"]) == 2


def test_a_malformed_carried_variant_names_the_trace(tmp_path: Path) -> None:
    with pytest.raises(KvproofInputError, match=r"t\.jsonl"):
        trace_variant(NAME, {TOML_KEY: "name = ["}, "t.jsonl")
    good = carried(_own_variant(tmp_path))
    bad = {**good, SWITCHES_KEY: {**good[SWITCHES_KEY], "prefill_hold": "sometimes"}}
    with pytest.raises(KvproofInputError, match="prefill_hold"):
        trace_variant(NAME, bad, "t.jsonl")
    assert json.loads(json.dumps(good)) == good  # plain data: it serialises unchanged


@pytest.mark.slow  # the reference engine (torch)
def test_replay_runs_the_variant_the_trace_carries(tmp_path: Path) -> None:
    variant = _own_variant(tmp_path)
    trace, protocol = _trace(variant, carried(variant))
    jsonl = tmp_path / "t.jsonl"
    write_jsonl(trace, jsonl, protocol=protocol)
    variant.path.unlink()
    assert main(["replay", str(jsonl)]) == 0
