"""The variant loader is strict: every bad input names its file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.invariants import INVARIANTS
from kvproof.spec.liveness import LIVENESS
from kvproof.spec.variant import VARIANTS_DIR, list_variants, load_variant, load_variant_file

INCIDENT = VARIANTS_DIR / "sglang-0.5.19-pd.toml"


def _write(tmp_path: Path, text: str, name: str = "sglang-0.5.19-pd") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_catalog_loads_with_sources_and_expectations() -> None:
    variants = list_variants()
    assert {v.name for v in variants} >= {"sglang-0.5.19-pd", "sglang-0.5.22-pd"}
    assert sum(v.buggy for v in variants) >= 8
    assert sum(not v.buggy for v in variants) >= 3
    for v in variants:
        assert v.sources and set(v.expect) == set(INVARIANTS)
        # one [expect] key per liveness property too, kept apart from the safety verdicts
        assert set(v.expect_liveness) == set(LIVENESS), v.name
    incident = load_variant("sglang-0.5.19-pd")
    assert incident.switches.honor_pending_reject is False
    assert incident.switches.success_overwrites_abort is True
    assert incident.deployment.prefill_pool_tokens == 681_280
    assert incident.deployment.context_len == 1_048_576
    fixed = load_variant("sglang-0.5.22-pd")
    # v0.5.22 frees on the drain ACK or a 30 s timeout: safe only under bounded_transfer.
    assert fixed.switches.honor_pending_reject and fixed.switches.release == "deferred_timeout"
    # ... and live (issue #29) under the fairness of failure reports and timers.
    assert list(fixed.assume) == ["bounded_transfer", "transfer_eventually_ends"]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            lambda t: t.replace("page_tags = false", "page_tags = false\nturbo = true"),
            "unknown key 'switches.turbo'",
        ),
        (
            lambda t: t.replace('release = "immediate"', 'release = "never"'),
            "'switches.release' must be one of",
        ),
        (
            lambda t: t.replace("page_tags = false", 'page_tags = "no"'),
            "'switches.page_tags' must be true or false",
        ),
        (lambda t: t.replace("page_tags = false\n", ""), "missing key 'switches.page_tags'"),
        (
            lambda t: t.replace('one_owner = "holds"', 'one_owner = "maybe"'),
            "'expect.one_owner' must be 'holds' or 'violated'",
        ),
        (
            lambda t: t.replace('one_owner = "holds"', 'one_owner = "holds"\nliveness = "holds"'),
            "unknown invariant 'expect.liveness'",
        ),
        (
            lambda t: t.replace("page_size = 64", "page_size = -1"),
            "'deployment.page_size' must be a positive integer",
        ),
        (lambda t: t + "\n[[", "malformed TOML"),
        (lambda t: t.replace('name = "sglang-0.5.19-pd"', 'name = "other"'), "file is named"),
    ],
)
def test_bad_variant_names_file_and_key(tmp_path: Path, edit, needle: str) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, edit(INCIDENT.read_text()))
    with pytest.raises(KvproofInputError) as info:
        load_variant_file(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "no-such-variant"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such variant" in err and "Traceback" not in err
    bad = _write(
        tmp_path, INCIDENT.read_text().replace("page_tags = false", "page_tags = false\nx = 1")
    )
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "switches.x" in err and str(bad) in err
    broken = _write(tmp_path, "name = [", name="broken")
    assert main(["check", str(broken)]) == 2
    assert "malformed TOML" in capsys.readouterr().err


def _with_complete(value: str) -> str:
    name = 'name = "sglang-0.5.19-pd"'
    return INCIDENT.read_text().replace(name, f"{name}\ncomplete = {value}")


def test_complete_key_is_read(tmp_path: Path) -> None:
    assert load_variant_file(_write(tmp_path, _with_complete("true"))).complete is True
    assert load_variant_file(INCIDENT).complete is False  # optional, off by default


@pytest.mark.parametrize("value", ['"yes"', "1"])
def test_bad_complete_value_is_exit_2_naming_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = _write(tmp_path, _with_complete(value))
    with pytest.raises(KvproofInputError, match="'complete' must be true or false"):
        load_variant_file(path)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'complete'" in err and str(path) in err
