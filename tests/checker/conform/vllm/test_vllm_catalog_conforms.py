"""What keeps the vLLM variants' ``[upstream]`` tables true (the vLLM half of
``tests/checker/conform/test_catalog_conforms.py``): every vLLM variant that lists releases conforms
to each of them, under its ``[upstream.kv_connector_extra_config]``, when the release's own
scheduler and NIXL connector run (cached wheels; skips with the reason when a release is
neither cached nor a wheel in ``KVPROOF_VLLM_WHEELS``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvproof.checker.conform.vllm import fetch
from kvproof.checker.conform.vllm.run import conform
from kvproof.spec import releases
from kvproof.spec.variant import list_variants, load_variant

pytestmark = pytest.mark.slow  # 6 conform runs of 50 walks: about 40 s on a shared box

LISTED = [
    (v.name, release)
    for v in list_variants()
    if v.upstream is not None and v.engine == "vllm"
    for release in v.upstream.releases
]


def _tree(version: str) -> Path:
    tree = fetch.cache_root() / version
    if (tree / fetch.MARKER).is_file():
        return tree
    folder = os.environ.get("KVPROOF_VLLM_WHEELS")
    if not folder or not sorted(Path(folder).glob(f"vllm-{version}-*.whl")):
        pytest.skip(f"vLLM {version} is neither cached ({tree}) nor a wheel in KVPROOF_VLLM_WHEELS")
    return fetch.cached(version)


def test_every_listed_vllm_release_has_an_adapter() -> None:
    assert {r for _, r in LISTED} <= set(releases.adapted("vllm"))
    assert ("vllm-0.34-nixl-push", "0.34.0") in LISTED


@pytest.mark.parametrize(("name", "release"), LISTED)
def test_a_listed_vllm_release_conforms(name: str, release: str) -> None:
    tree = _tree(release)
    run = conform(load_variant(name), str(tree), traces=50)
    assert run.exit_code == 0, (name, release, run.switch, run.detail)
