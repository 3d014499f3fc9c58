"""User-defined protocols: ``--protocol module:attr`` with the user's switches, invariants
and variants (the worked example in ``examples/custom_protocol``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.verify.protocols import load_protocol, resolve_variants
from kvproof.spec.errors import KvproofInputError

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "custom_protocol"
VARIANTS = EXAMPLE / "variants"
BY_FILE = f"{EXAMPLE / 'my_handoff.py'}:Handoff"
SMALL = ["--requests", "2", "--pages", "3"]


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    return "my_handoff:Handoff"


@pytest.mark.slow
def test_check_gives_the_expected_verdicts(
    on_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", "--all", "--protocol", on_path, "--variants-dir", str(VARIANTS), "--json"]
    assert main([*argv, *SMALL]) == 0
    out = {v["variant"]: v for v in json.loads(capsys.readouterr().out)}
    assert set(out) == {"deferred-ack", "early-free-unposted"}
    assert all(v["matches_expectation"] for v in out.values())
    fixed, early = out["deferred-ack"], out["early-free-unposted"]
    assert fixed["verdict"] == "holds" and fixed["proof"]["proved"]
    verdicts = {i["name"]: i["verdict"] for i in early["invariants"]}
    # The user's own invariant is checked next to kvproof's.
    assert verdicts == {
        "isolation": "violated",
        "no_stray_write": "violated",
        "reject_final": "holds",
        "one_owner": "holds",
        "inflight_pages_held": "violated",
    }
    # The changed rule in action: abort frees before anything is posted, prefill still posts.
    own = next(i for i in early["invariants"] if i["name"] == "inflight_pages_held")
    labels = [row["label"] for row in own["trace"]]
    assert labels.index("abort(r0)") < labels.index("post(r0, p0)")


@pytest.mark.slow
def test_prove_by_file_path_and_own_variants_dir() -> None:
    # No --variants-dir: the module's VARIANTS_DIR is the default.
    assert main(["prove", "deferred-ack", "--protocol", BY_FILE]) == 0
    assert main(["prove", "early-free-unposted", "--protocol", BY_FILE, "--json"]) == 1


@pytest.mark.slow
def test_prove_reports_the_changed_rule(on_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["prove", "early-free-unposted", "--protocol", on_path, "--variants-dir", str(VARIANTS)]
    assert main([*argv, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert not result["proved"] and result["cti"]["action"].startswith("abort")


def test_user_variants_are_validated_strictly(tmp_path: Path) -> None:
    user = load_protocol(BY_FILE)
    text = (VARIANTS / "deferred-ack.toml").read_text()
    bad = {
        "free_unposted_on_abort = false": "free_unposted_on_abort = 1",
        'release = "deferred_ack"': 'release = "never"',
        'inflight_pages_held = "holds"': 'inflight_pages_hold = "holds"',
    }
    needles = ["must be true or false", "must be one of", "unknown invariant"]
    for (old, new), needle in zip(bad.items(), needles, strict=True):
        (tmp_path / "deferred-ack.toml").write_text(text.replace(old, new))
        with pytest.raises(KvproofInputError, match=needle):
            resolve_variants([], True, tmp_path, user)


def test_kvproof_variants_stay_kvproofs(capsys: pytest.CaptureFixture[str]) -> None:
    # Without --protocol a user variant is not a kvproof variant: one line, exit 2.
    assert main(["check", str(VARIANTS / "deferred-ack.toml")]) == 2
    assert "unknown key 'switches.free_unposted_on_abort'" in capsys.readouterr().err


def test_bad_protocol_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--all", "--protocol", "no_such_module_kv:build"]) == 2
    assert main(["check", "--all", "--protocol", "builtins:repr"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "cannot import" in err[0] and "not a kvproof Protocol" in err[1]


def test_explore_takes_the_user_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--protocol", BY_FILE, "--variants-dir", str(VARIANTS), "--json"]
    size = ["--requests", "1", "--pages", "2"]
    assert main(["explore", "early-free-unposted", *size, *base]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["variant"] == "early-free-unposted" and data["states"] > 0
    assert main(["explore", "deferred-ack", *size, *base]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == "deferred-ack"
