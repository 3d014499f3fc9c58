"""Decode's admission, run real (``checker/upstream/admission.py``): the release's
``Scheduler._add_request_to_queue`` -> ``DecodePreallocQueue.add`` decides whether a prompt
over decode's own limit is retired at the door (0.5.21+) or queued as its 1-token stub
(0.5.15-0.5.20), and the projection shows it (``RequestView.admission``). The model's side
(``decode_admission``) needs no wheel; the engine's mirror is ``tests/refimpl/
test_decode_admission.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from release_copy import tree

from kvproof.checker.cli import main
from kvproof.checker.conform import model_side
from kvproof.checker.conform.engine import RequestSpec, Step
from kvproof.checker.upstream.engine import open_sglang
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.spec.variant import load_variant

RETIRE = "if not is_retracted and not is_rebootstrap and is_unadmitted_reject(req):"
OVER_D, FITS = RequestSpec(False, True), RequestSpec(False, False)
SENT = [("alloc", 0), ("send",), ("post", 0), ("land", 0), ("done",)]


def _step(action: str, r: int, *args: int) -> Step:
    return Step(ActionInstance(action, (r, *args)), "success" if action == "done" else "none")


def test_0_5_22_retires_a_prompt_over_decode_s_limit_at_the_door() -> None:
    tree("0.5.22")
    with open_sglang(load_variant("sglang-0.5.22-pd"), "0.5.22") as engine:
        h = engine.harness((OVER_D, FITS))
        h.apply(_step("arrive", 0))
        h.apply(_step("arrive", 1))
        views = h.project().requests
        assert [v.admission for v in views] == ["retired", "queued"]
        # Retired: no receiver, no queue entry; the client got its answer (the release's
        # ``retire_unadmitted_request`` streamed it), and nothing is held.
        assert 0 not in h.entries and 0 in h.outcome.streamed and not views[0].pages
        assert [e.req.r for e in h.prealloc.queue] == [1]


def test_0_5_19_queues_the_stub_reserves_and_ends_it_at_its_first_step() -> None:
    tree("0.5.19")
    with open_sglang(load_variant("sglang-0.5.19-pd"), "0.5.19") as engine:
        h = engine.harness((OVER_D,))
        h.apply(_step("arrive", 0))
        assert h.project().requests[0].admission == "queued"
        assert len(h.entries[0].req.origin_input_ids) == 1  # set_finish_with_abort's stub
        for action, *args in SENT:
            h.apply(_step(action, 0, *args))
        view = h.project().requests[0]
        # Committed, then the running batch's first step: ``Req.update_finish_state`` moved
        # the pending reject to ``finished_reason`` and the pages went back.
        assert view.committed and not view.pages and h.entries[0].req.finished()


def _model_walk(variant: str, actions: list[tuple[str, ...]]) -> tuple[Concrete, State]:
    concrete = Concrete(Instance(protocol_of(load_variant(variant)), {"Req": 1, "Page": 1}))
    state = next(
        s
        for s in concrete.initial_states()
        if concrete.value(s, "over_d", (0,)) and not concrete.value(s, "over_p", (0,))
    )
    for action, *args in actions:
        nxt = concrete.step(state, ActionInstance(action, (0, *map(int, args))))
        assert nxt is not None, action
        state = nxt
    return concrete, state


def test_the_model_retires_or_queues_decode_s_own_reject_by_its_switch() -> None:
    concrete, state = _model_walk("sglang-0.5.22-pd", [("arrive",)])
    assert model_side.admission_of(concrete, state, 0) == "retired"
    assert concrete.value(state, "resp", (0,)) == "rejected"
    walk = [("arrive",), ("alloc", "0"), ("send",), ("post", "0"), ("land", "0"), ("done",)]
    concrete, state = _model_walk("sglang-0.5.19-pd", [*walk, ("commit",)])
    assert model_side.admission_of(concrete, state, 0) == "queued"
    # The stub's transfer is taken, then its 400; it never runs on, and keeps no page.
    assert concrete.value(state, "resp", (0,)) == "rejected"
    assert concrete.value(state, "dphase", (0,)) == "done"
    assert not concrete.value(state, "owns", (0, 0))


def _planted(tmp_path: Path, version: str) -> Path:
    src = tree(version)
    dest = tmp_path / "python"
    shutil.copytree(src, dest, copy_function=os.link)  # hard links: one file is replaced
    decode = dest / "sglang" / "srt" / "disaggregation" / "decode.py"
    text = decode.read_text()
    assert text.count(RETIRE) == 1
    decode.unlink()
    decode.write_text(text.replace(RETIRE, "if False:"))
    return dest


@pytest.mark.slow
def test_removing_decode_s_retire_branch_is_an_admission_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The benchmark's ``decode_reserve_retires_no_reject``: decode queues (and would
    reserve for) a request it rejected; conform names ``decode_admission``."""
    dest = _planted(tmp_path, "0.5.22")
    rc = main(
        ["conform", "sglang-0.5.22-pd", "--sglang", str(dest), "--traces", "200",
         "--out", str(tmp_path / "out"), "--json"]
    )  # fmt: skip
    got = json.loads(capsys.readouterr().out)
    assert rc == 1 and got["verdict"] == "diverges", got
    assert "admission: model retired, code queued" in json.dumps(got)
    assert got["switch"] == "decode_admission"


@pytest.mark.slow
def test_a_variant_saying_queue_reject_matches_the_planted_copy(tmp_path: Path) -> None:
    """The same copy against the model with the other value: the whole run conforms, so
    the divergence above is the admission's and nothing else's."""
    from kvproof.checker.upstream.run import conform

    dest = _planted(tmp_path, "0.5.22")
    v = load_variant("sglang-0.5.22-pd")
    v = dataclasses.replace(
        v, switches=dataclasses.replace(v.switches, decode_admission="queue_reject")
    )
    run = conform(v, str(dest), traces=200)
    assert run.exit_code == 0, run.detail
