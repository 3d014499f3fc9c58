"""Every variant's ``demo`` key is what ``kvproof demo incident`` shows on it: the
prediction that lets the README's main job exit 0 stays true (issue 41)."""

from __future__ import annotations

import pytest

from kvproof.checker.runs.demo_run import demo
from kvproof.spec.variant import DEMO_OUTCOMES, list_variants


@pytest.mark.slow
@pytest.mark.parametrize("name", [v.name for v in list_variants()])
def test_demo_shows_what_the_variant_predicts(name: str) -> None:
    run = demo(name)
    assert run.expected in DEMO_OUTCOMES
    assert run.outcome == run.expected, f"{name}: the demo shows {run.outcome}"
    assert run.exit_code == 0


def test_a_bad_demo_key_is_one_line_naming_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant, parse_variant

    src = load_variant("sglang-0.5.19-pd").path.read_text(encoding="utf-8")
    bad = src.replace('demo = "leak"', 'demo = "leaks"')
    with pytest.raises(KvproofInputError, match="'demo' must be one of"):
        parse_variant(bad, tmp_path / "v.toml")
