"""The [assume] table: names the protocol declares, a reason each, no contradictions."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.assumptions import ASSUMPTIONS, contradiction
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import VARIANTS_DIR, list_variants, load_variant_file, parse_variant

FIXED = VARIANTS_DIR / "sglang-0.5.22-pd.toml"


def _with_assume(tmp_path: Path, table: str) -> Path:
    text = FIXED.read_text()
    start = text.index("[assume]")
    end = text.index("[deployment]")
    path = tmp_path / "sglang-0.5.22-pd.toml"
    path.write_text(text[:start] + table + "\n\n" + text[end:])
    return path


def test_every_declared_assumption_has_text_and_source() -> None:
    for info in ASSUMPTIONS.values():
        assert info.text and info.source
        for other in info.excludes:
            assert other in ASSUMPTIONS and info.name in ASSUMPTIONS[other].excludes


def test_catalog_assumptions_are_declared_with_reasons() -> None:
    used = {name for v in list_variants() for name in v.assume}
    assert "bounded_transfer" in used and "lease_outlives_read" in used
    assert used <= set(ASSUMPTIONS)
    for v in list_variants():
        assert all(why.strip() for why in v.assume.values())


def test_assume_is_optional() -> None:
    text = FIXED.read_text()
    start, end = text.index("[assume]"), text.index("[deployment]")
    variant = parse_variant(text[:start] + text[end:], FIXED)
    assert dict(variant.assume) == {}


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('[assume]\nfast_network = "trust me"', "unknown assumption 'assume.fast_network'"),
        ("[assume]\nbounded_transfer = true", "'assume.bounded_transfer' must be a string"),
        ('[assume]\nbounded_transfer = "  "', "'assume.bounded_transfer' must be a string"),
        (
            '[assume]\nbounded_transfer = "a"\nstalled_transfer = "b"',
            "contradictory assumptions 'assume.bounded_transfer' and 'assume.stalled_transfer'",
        ),
    ],
)
def test_bad_assume_names_file_and_key(tmp_path: Path, table: str, needle: str) -> None:
    path = _with_assume(tmp_path, table)
    with pytest.raises(KvproofInputError) as info:
        load_variant_file(path)
    assert needle in str(info.value) and str(path) in str(info.value)


def test_a_protocol_declaring_none_rejects_any(tmp_path: Path) -> None:
    path = _with_assume(tmp_path, '[assume]\nbounded_transfer = "x"')
    with pytest.raises(KvproofInputError) as info:
        load_variant_file(path, assumptions=())
    assert "the protocol declares no assumptions" in str(info.value)


def test_contradiction_helper() -> None:
    assert contradiction(["bounded_transfer", "lease_outlives_read"]) is None
    assert contradiction(["stalled_transfer", "bounded_transfer"]) == (
        "stalled_transfer",
        "bounded_transfer",
    )


def test_cli_bad_assume_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _with_assume(tmp_path, '[assume]\nbounded_transfer = "a"\nstalled_transfer = "b"')
    assert main(["check", str(path), "--no-prove"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "assume.stalled_transfer" in err


def test_cli_without_an_unlisted_assumption_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "sglang-0.5.22-pd", "--without", "lease_outlives_read"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--without" in err and "bounded_transfer" in err
