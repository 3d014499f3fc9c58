"""Decode's lease-renewal heartbeats, driven in the walks (issue 40): a ``Beat`` lets time
pass one heartbeat interval with every heartbeat decode's scheduler packages delivered to
prefill (``nixl/base_worker.py::_handle_heartbeat``); a stall is the same time with none
delivered (a fault). The safe pull design (``vllm-nixl-fixed``: the lease outlives the
read) then holds on 0.34.0 exactly while heartbeats get through, and a copy of 0.34.0
whose heartbeat renews nothing is caught without any fault."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kvproof.checker.conform.vllm.run import conform
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.slow
WORKER = Path("vllm", "distributed", "kv_transfer", "kv_connector", "v1", "nixl", "base_worker.py")
BEFORE = "self._reqs_to_send[req_id] = max(old, new_expiry)"
PLANTED = "self._reqs_to_send[req_id] = old  # planted: the heartbeat renews nothing"


@pytest.mark.parametrize("name", ["vllm-0.34-nixl-pull", "vllm-0.34-nixl-push"])
def test_walks_deliver_heartbeats(vllm_tree: Path, name: str) -> None:
    run = conform(load_variant(name), str(vllm_tree), faults=False, traces=60)
    assert run.exit_code == 0
    assert run.decisions["leases a heartbeat extended"] > 0


def test_the_safe_lease_holds_while_heartbeats_get_through(vllm_tree: Path) -> None:
    """No fault, so no stall: decode's heartbeats renew the lease and the code keeps the
    blocks while decode reads, as lease_outlives_read says (with faults on, a stall
    breaks it: tests/checker/conform/vllm/test_vllm_conform.py)."""
    run = conform(load_variant("vllm-nixl-fixed"), str(vllm_tree), faults=False)
    assert run.exit_code == 0, run.detail
    assert run.decisions["leases a heartbeat extended"] > 0


def test_a_heartbeat_that_renews_nothing_is_caught(vllm_tree: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(vllm_tree / "vllm", tree / "vllm", copy_function=os.symlink)
    (tree / WORKER).unlink()
    text = (vllm_tree / WORKER).read_text()
    assert BEFORE in text, "0.34.0's _handle_heartbeat moved: update the planted change"
    (tree / WORKER).write_text(text.replace(BEFORE, PLANTED))
    run = conform(load_variant("vllm-nixl-fixed"), str(tree), faults=False)
    assert not run.decisions.get("leases a heartbeat extended")
    assert run.exit_code == 1 and run.diagnosis is not None
    assert "lease_outlives_read" in run.diagnosis.assumptions
    assert any("source" in line for line in run.detail)
