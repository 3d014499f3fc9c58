"""A change planted in a copy of 0.34.0, as a vLLM developer's branch would have it: the
scheduler's ``finish_requests`` frees a WAITING_FOR_REMOTE_KVS request's blocks at once, as
before #32255. conform catches it: the READs in flight land on freed blocks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kvproof.checker.conform.vllm.run import conform
from kvproof.spec.variant import load_variant

pytestmark = pytest.mark.slow
SCHED = Path("vllm", "v1", "core", "sched", "scheduler.py")
BEFORE = """                delay_free_blocks = (
                    self.deferred_loads.pop(request.request_id, None) is None
                    and request.request_id not in self.finished_recving_kv_req_ids
                )"""
PLANTED = """                delay_free_blocks = False  # planted: before #32255
                self.deferred_loads.pop(request.request_id, None)"""


def planted_copy(tree: Path, dest: Path) -> Path:
    """The release as links, with the scheduler a real, edited copy."""
    shutil.copytree(tree / "vllm", dest / "vllm", copy_function=os.symlink)
    (dest / SCHED).unlink()
    text = (tree / SCHED).read_text()
    assert BEFORE in text, "0.34.0's finish_requests moved: update the planted change"
    (dest / SCHED).write_text(text.replace(BEFORE, PLANTED))
    return dest


def test_the_untouched_copy_conforms(vllm_tree: Path, tmp_path: Path) -> None:
    shutil.copytree(vllm_tree / "vllm", tmp_path / "vllm", copy_function=os.symlink)
    run = conform(load_variant("vllm-0.34-nixl-pull"), str(tmp_path), traces=60)
    assert run.exit_code == 0


def test_freeing_a_waiting_request_at_once_is_caught(vllm_tree: Path, tmp_path: Path) -> None:
    """Caught either as the divergence (pages freed under in-flight READs) or as the
    release's own assertion when the late finished_recving finds no request."""
    tree = planted_copy(vllm_tree, tmp_path / "tree")
    run = conform(load_variant("vllm-0.34-nixl-pull"), str(tree), out=tmp_path / "out")
    assert run.exit_code == 1
    if run.raised is not None:
        assert "scheduler.py" in run.raised and "AssertionError" in run.raised
    else:
        assert any("pages" in line for line in run.detail)
