"""Names by release (issue 41): ``sglang==0.5.20`` is the variant whose ``[upstream]``
lists 0.5.20; the did-you-mean ranks by release; ``check``, ``conform`` and ``demo`` take it."""

from __future__ import annotations

import pytest

from kvproof.checker.cli import main
from kvproof.spec.by_release import (
    Release,
    parse_release,
    release_span,
    resolve,
    suggest,
    variants_of,
)
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import list_variants, load_variant

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


@pytest.mark.parametrize(
    ("release", "variant"),
    [
        ("sglang==0.5.19", "sglang-0.5.19-pd"),
        ("sglang==0.5.18", "sglang-0.5.19-pd"),
        ("sglang==0.5.20", "sglang-0.5.20-pd"),
        ("sglang==0.5.21", "sglang-0.5.21-pd"),
        ("sglang==0.5.22", "sglang-0.5.22-pd"),
        ("sglang==0.5.23", "sglang-0.5.22-pd"),
    ],
)
def test_a_release_is_the_variant_that_lists_it(release: str, variant: str) -> None:
    got = resolve(release)
    assert got.variant.name == variant and got.release == parse_release(release)
    assert got.variant.upstream is not None and got.release is not None
    assert got.release.version in got.variant.upstream.releases
    assert got.why.startswith(f"{release} is {variant}: its [upstream] lists ")
    assert load_variant(release).name == variant  # every command that loads a variant


def test_settings_pick_among_a_releases_variants() -> None:
    got = resolve("sglang==0.5.22", env={DEFERRED: "false"})
    assert got.variant.name == "sglang-pd-early-free-abort"
    assert "with SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=False" in got.why
    # at the release's defaults the plain variant; its siblings (same code, other
    # assumptions) are named, not hidden
    plain = resolve("sglang==0.5.22")
    assert "sglang-pd-deferred-timeout" in plain.also
    assert "sglang-pd-early-free-abort" not in plain.also
    # a default given explicitly fits the plain variant
    on = resolve("sglang==0.5.22", env={DEFERRED: "1"}, defaults={DEFERRED: True})
    assert on.variant.name == "sglang-0.5.22-pd"


def test_every_listed_release_resolves_to_a_variant_listing_it() -> None:
    catalog = list_variants()
    listed = {
        (v.upstream.engine, r)
        for v in catalog
        if v.upstream is not None
        for r in v.upstream.releases
    }
    assert ("sglang", "0.5.20") in listed
    for engine, version in listed:
        got = resolve(f"{engine}=={version}", variants=catalog)
        assert got.variant in variants_of(Release(engine, version), catalog)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("sglang==0.5.14", "the sglang releases kvproof knows are 0.5.15 to 0.5.23"),
        ("sglang==five", "is not a version like '0.5.22'"),
        ("nosuch==1.0", "no variant lists a release of nosuch"),
    ],
)
def test_a_release_no_variant_is_bad_input(text: str, says: str) -> None:
    with pytest.raises(KvproofInputError, match=says):
        resolve(text)
    assert main(["check", text, "--quiet"]) == 2


def test_settings_no_variant_of_the_release_has_are_bad_input() -> None:
    with pytest.raises(KvproofInputError, match=r"no variant is sglang==0\.5\.20 with"):
        resolve("sglang==0.5.20", env={DEFERRED: "true"})


def test_did_you_mean_ranks_by_release() -> None:
    # 0.5.18 behaves like sglang-0.5.19-pd: it comes first, not 0.5.22 by spelling
    assert suggest("sglang-0.5.18-pd")[0] == "sglang-0.5.19-pd"
    assert suggest("sglang-0.5.23-pd")[0] == "sglang-0.5.22-pd"
    # a typo of a name that exists is spelling's
    assert suggest("sglang-0.5.22-pd-guardd")[0] == "sglang-0.5.22-pd-guarded"
    with pytest.raises(KvproofInputError, match=r"'sglang-0.5.19-pd' \(sglang==0.5.18's variant\)"):
        load_variant("sglang-0.5.18-pd")


def test_release_span_and_parse() -> None:
    assert release_span(load_variant("sglang-0.5.19-pd")) == "0.5.15-0.5.19"
    assert release_span(load_variant("sglang-0.5.20-pd")) == "0.5.20"
    assert release_span(load_variant("vllm-nixl-fixed")) == ""
    assert parse_release("sglang-0.5.19-pd") is None
    assert parse_release("sglang==0.5.20") == Release("sglang", "0.5.20")


def test_check_and_demo_take_a_release(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "sglang==0.5.20", "--invariant", "isolation", "--no-prove", "--quiet"]
    assert main(argv) == 1
    got = capsys.readouterr()
    assert "sglang==0.5.20 is sglang-0.5.20-pd" in got.err
    assert got.out.startswith("sglang-0.5.20-pd")
    assert main(["demo", "incident", "--variant", "sglang==0.5.19"]) == 0
    assert "sglang==0.5.19 is sglang-0.5.19-pd" in capsys.readouterr().err


def test_conform_says_which_release_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from kvproof.checker.upstream import fetch

    for version in ("0.5.20", "0.5.23"):
        try:
            fetch.cached(version)
        except KvproofInputError as exc:
            pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")
    assert main(["conform", "sglang==0.5.20", "--traces", "3"]) == 0
    got = capsys.readouterr()
    assert "running sglang 0.5.20: the release named, sglang==0.5.20" in got.err
    assert "sglang-0.5.20-pd vs sglang 0.5.20" in got.out
    assert main(["conform", "sglang-0.5.22-pd", "--traces", "3"]) == 0
    err = capsys.readouterr().err
    assert "running sglang 0.5.23: the newest of 0.5.22-0.5.23 that sglang-0.5.22-pd's" in err


def test_a_vllm_release_is_its_pull_variant_and_push_by_its_transfer_mode() -> None:
    # spec/releases.toml holds vLLM's defaults (transfer_mode "pull", the 30 s lease, the
    # "fail" policy), so a release alone resolves, and transfer_mode picks push.
    assert resolve("vllm==0.34.0").variant.name == "vllm-0.34-nixl-pull"
    push = resolve("vllm==0.33.0", server_args={"transfer_mode": "push"})
    assert push.variant.name == "vllm-0.34-nixl-push"
    with pytest.raises(KvproofInputError, match=r"0\.33\.0 to 0\.34\.0"):
        resolve("vllm==0.25.0")
