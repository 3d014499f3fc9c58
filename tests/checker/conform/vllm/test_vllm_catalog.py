"""What keeps the vLLM variants' ``[upstream]`` tables true: each listed release conforms
(``kvproof conform --vllm``), and an exempt variant whose exemption names a switch 0.34.0
does not have diverges on that switch. Runs on the cached 0.34.0; skips without it."""

from __future__ import annotations

import pytest

from kvproof.checker.conform.vllm.run import conform
from kvproof.spec.variant import list_variants, load_variant

pytestmark = pytest.mark.slow

LISTED = [
    (v.name, release)
    for v in list_variants()
    if v.upstream is not None and v.engine == "vllm"
    for release in v.upstream.releases
]


def test_the_catalog_lists_vllm_releases() -> None:
    assert {"vllm-0.34-nixl-pull", "vllm-0.34-nixl-push"} <= {n for n, _ in LISTED}


# Every listed release conforming is test_vllm_catalog_conforms.py's (each release's tree).


@pytest.mark.parametrize(
    ("name", "switch"),
    [("vllm-abort-during-read", "release"), ("vllm-nixl-failure-as-success", "failure_status")],
)
def test_an_exempt_variant_diverges_where_its_exemption_says(vllm_tree, name, switch) -> None:
    run = conform(load_variant(name), str(vllm_tree), traces=50)
    assert run.exit_code == 1 and run.switch == switch
