"""The cached vLLM 0.34.0 release these tests drive: ``~/.cache/kvproof/vllm/0.34.0``,
unpacked from ``KVPROOF_VLLM_WHEELS`` (or ``/tmp/wheels``) when a wheel is there; the tests
skip with the reason when neither is (offline, no wheel), never download 239 MB."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvproof.checker.conform.vllm import fetch

RELEASE = "0.34.0"


def release_tree() -> Path:
    tree = fetch.cache_root() / RELEASE
    if (tree / fetch.MARKER).is_file():
        return tree
    folder = os.environ.get("KVPROOF_VLLM_WHEELS") or "/tmp/wheels"
    if not sorted(Path(folder).glob(f"vllm-{RELEASE}-*.whl")):
        pytest.skip(f"vLLM {RELEASE} is neither cached ({tree}) nor a wheel in {folder}")
    os.environ.setdefault("KVPROOF_VLLM_WHEELS", folder)
    return fetch.cached(RELEASE)


@pytest.fixture(scope="session")
def vllm_tree() -> Path:
    return release_tree()


@pytest.fixture(scope="module")
def vllm_mods(vllm_tree: Path) -> Iterator[dict]:
    """The release's modules, loaded once for a test module (and unloaded after it)."""
    from kvproof.checker.conform.vllm.loader import Loaded
    from kvproof.checker.conform.vllm.modules import load

    with Loaded(vllm_tree) as loaded:
        yield load(loaded)
