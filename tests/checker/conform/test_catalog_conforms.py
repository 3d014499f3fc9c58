"""What keeps the catalog's ``[upstream]`` tables true: every SGLang variant that lists
releases conforms to each of them, under its ``[upstream.env]``, when the release's own
code is run (``kvproof conform``, cached wheels; skips with the reason offline).

And the other half: an exempt variant is not silently a release. The two cases that say
"no shipped release has this under any setting" are run against a release they are
closest to and must diverge, on the switch their exemption names.
"""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.run import conform
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant, list_variants, load_variant

pytestmark = pytest.mark.slow  # 19 conform runs: about 23 s together on a shared 2-core box

# A listed claim conform now shows false (kept listed until the catalog gets a variant for
# it; strict: the mark fails once it conforms again).
KNOWN_FALSE: dict[tuple[str, str], str] = {}
LISTED = [
    (v.name, release)
    for v in list_variants()
    if v.upstream is not None and v.engine == "sglang"  # vLLM: kvproof conform --vllm
    for release in v.upstream.releases
]
CELLS = [
    pytest.param(*cell, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FALSE[cell]))
    if cell in KNOWN_FALSE
    else cell
    for cell in LISTED
]


def _cached(version: str) -> None:
    try:
        fetch.cached(version)
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")


def test_the_catalog_lists_releases() -> None:
    assert len(LISTED) >= 10 and {r for _, r in LISTED} == set(fetch.RELEASES)


@pytest.mark.parametrize(("name", "release"), CELLS)
def test_a_listed_release_conforms(name: str, release: str) -> None:
    _cached(release)
    variant: Variant = load_variant(name)
    run = conform(variant, release, traces=50, faults=True)
    assert run.exit_code == 0, (name, release, run.switch, run.detail)
    upstream = variant.upstream
    assert upstream is not None
    for key, value in upstream.env.items():  # the table's env is what the code ran under
        assert run.env[key] == value and run.env_source[key] == "variant"


# 0.5.19 with deferred release on, and the variant's release set as that code's: what is
# left is decode freeing a failure it did not start at once (a client abort alone, with
# release off, would be named ``release`` first, rightly).
DEFERRED_0519 = ({"SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE": True}, "deferred_timeout")


@pytest.mark.parametrize(
    ("name", "release", "switch", "setting"),
    [
        ("sglang-pd-waiting-timeout-free", "0.5.22", "decode_gives_up", None),
        ("sglang-pd-success-overwrites-abort", "0.5.22", "release", None),
        ("mooncake-batch-failed-partial", "0.5.22", "failed_means_drained", None),
        ("sglang-pd-checksum-decode-only", "0.5.19", "failed_means_drained", DEFERRED_0519),
    ],
)
def test_an_exempt_variant_diverges_where_its_exemption_says(
    name: str, release: str, switch: str, setting: tuple[dict[str, bool], str] | None
) -> None:
    _cached(release)
    variant = load_variant(name)
    assert variant.upstream is not None and switch in (variant.upstream.exempt or "")
    env: dict[str, bool] = {}
    if setting is not None:
        env, how = setting
        sw = dataclasses.replace(variant.switches, release=how)
        variant = dataclasses.replace(variant, switches=sw)
    run = conform(variant, release, traces=200, faults=True, env=env)
    # The exact diagnosis names every single flip that makes the trace conform; the
    # exemption's switch must be one of them (0.5.19 frees an abort at once too, so
    # ``release = immediate`` can explain the same trace).
    assert run.diagnosis is not None, (name, release, run.detail)
    named = {s for s, _ in run.diagnosis.explained_by}
    assert switch in named, (name, release, run.diagnosis.headline)
