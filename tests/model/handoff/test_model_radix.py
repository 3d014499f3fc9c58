"""Decode's radix cache in the model (issue 12 item 4): shared head pages, one_owner, proofs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance as A
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.model.search.induction import prove
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant, parse_variant

TRACES = Path(__file__).resolve().parents[3] / "traces"
RACE, FIXED = "sglang-pd-decode-radix-race", "sglang-pd-decode-radix-fixed"
SIZES = {"Req": 2, "Page": 2}
# r0 runs, inserts its only page, finishes; r1 (a head hit) locks it and takes a page.
RUN_R0 = ["arrive 0", "alloc 0 0", "send 0", "post 0 0", "land 0 0", "done 0", "commit 0"]


def steps(*words: str) -> list[A]:
    out = []
    for w in words:
        name, *args = w.split()
        out.append(A(name, tuple(int(a) for a in args)))
    return out


def concrete(name: str) -> Concrete:
    return Concrete(Instance(protocol_of(load_variant(name)), SIZES))


def run(c: Concrete, seq: list[A]) -> Any:
    init = {"hit": {(0,): False, (1,): True}}
    state = c.make_state(init)
    for inst in seq:
        nxt = c.step(state, inst)
        assert nxt is not None, f"{inst} not enabled"
        state = nxt
    return state


def test_free_while_cached_hands_a_mapped_page_to_a_writer() -> None:
    c = concrete(RACE)
    seq = steps(*RUN_R0, "insert 0 0", "finish 0", "arrive 1", "share 1 0", "alloc 1 0")
    state = run(c, seq)
    assert c.value(state, "cached", (0,)) and c.value(state, "owns", (1, 0))
    state = run(c, seq + steps("send 1", "post 1 0", "land 1 0"))
    assert c.value(state, "shared_write", (0,)) and "one_owner" in c.violated(state)
    state = run(c, seq + steps("send 1", "post 1 0", "land 1 0", "done 1", "commit 1"))
    assert "isolation" in c.violated(state)  # r1 reads its head page: overwritten


def test_refcounted_tree_keeps_its_page_and_readers_read_the_prefix() -> None:
    c = concrete(FIXED)
    seq = steps(*RUN_R0, "insert 0 0", "finish 0", "arrive 1", "share 1 0")
    state = run(c, seq)
    assert not c.value(state, "owns", (0, 0)) and c.value(state, "prefix_ok", (0,))
    assert c.step(state, A("alloc", (1, 0))) is None  # the tree holds it: not free
    state = run(c, seq + steps("alloc 1 1", "send 1", "post 1 1", "land 1 1", "done 1", "commit 1"))
    assert c.violated(state) == [] and c.value(state, "resp", (1,)) == "ok"


def test_a_hit_sends_only_after_locking_its_head() -> None:
    c = concrete(FIXED)
    state = run(c, steps("arrive 1", "alloc 1 1"))
    assert c.step(state, A("send", (1,))) is None
    assert c.step(state, A("share", (1, 0))) is None  # nothing cached yet


def test_corpus_counterexamples_replay_in_the_model() -> None:
    for inv, length in (("isolation", 17), ("one_owner", 14)):
        trace = read_jsonl(TRACES / f"{RACE}.{inv}.jsonl")
        assert trace.violated == inv and len(trace.steps) == length
        c = Concrete(Instance(protocol_of(load_variant(RACE)), trace.sizes))
        states = replay(trace, c)
        assert inv in c.violated(states[-1])


def test_the_fixed_radix_variant_is_proved_and_the_race_is_not() -> None:
    result = prove(protocol_of(load_variant(FIXED)))
    assert result.proved, result.summary
    names = {c.name for c in protocol_of(load_variant(FIXED)).strengthening}
    assert {"cached_unowned", "shared_is_cached", "cached_keeps_prefix"} <= names
    # The race's switches with the fixed variant's conjuncts: not inductive.
    race = protocol_of(load_variant(RACE))
    fixed_conj = protocol_of(load_variant(FIXED)).strengthening
    assert not prove(dataclasses.replace(race, strengthening=fixed_conj)).proved


def test_radix_cache_defaults_off_and_needs_the_prefix_cache() -> None:
    text = load_variant("sglang-0.5.22-pd").path.read_text()
    assert "radix_cache" not in text  # older files need no edit
    assert load_variant("sglang-0.5.22-pd").switches.radix_cache == "off"
    bad = text.replace('remote_trim = "tail"', 'remote_trim = "tail"\nradix_cache = "refcounted"')
    with pytest.raises(KvproofInputError, match="decode_prefix_cache"):
        parse_variant(bad, Path("x.toml"))
    worse = text.replace('remote_trim = "tail"', 'remote_trim = "tail"\nradix_cache = "maybe"')
    with pytest.raises(KvproofInputError, match="radix_cache"):
        parse_variant(worse, Path("x.toml"))


def test_radix_vars_exist_only_with_the_radix_cache() -> None:
    off = protocol_of(load_variant("sglang-0.5.22-pd"))
    on = protocol_of(load_variant(FIXED))
    names = {v.name for v in on.vars} - {v.name for v in off.vars}
    assert names == {"cached", "shares", "prefix_ok", "shared_write"}
    assert {"insert", "share"} <= {a.name for a in on.actions}
    assert not {"insert", "share"} & {a.name for a in off.actions}
