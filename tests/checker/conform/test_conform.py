"""``kvproof conform`` against the real SGLang release code (cached wheels).

Each test needs a release's unpacked wheel in the kvproof cache (``$XDG_CACHE_HOME/kvproof/
sglang/VERSION``); one is fetched with pip the first time, and the test skips, with the
reason, when no wheel is cached and the index cannot be reached.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from release_copy import copy_release, tree

from kvproof.checker.cli import main
from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.run import conform
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


def test_0_5_19_conforms_to_its_variant(capsys: pytest.CaptureFixture[str]) -> None:
    tree("0.5.19")
    rc = main(["conform", "sglang-0.5.19-pd", "--sglang", "0.5.19", "--traces", "200", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["verdict"] == "conforms" and out["walks"] == 200
    assert out["steps"] > 200
    assert any("pop_transferred" in f for f in out["exercised"])
    assert out["env"]["SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"] is False


def test_0_5_22_conforms_with_faults() -> None:
    tree("0.5.22")
    run = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=300, faults=True)
    assert run.exit_code == 0, run.detail
    assert run.env["SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"] is True
    plain = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=300, faults=False)
    assert plain.exit_code == 0, plain.detail
    made = Counter(run.decisions) + Counter(plain.decisions)
    # The walks reached every decision: holds, releases, aborts, commits, ABORTs to prefill
    # (commits mostly without faults: with them most transfers end in an abort).
    assert all(made[k] > 0 for k in ("held", "released", "aborted", "committed"))
    assert made["aborts_sent_to_prefill"] > 0 and (run.decisions or {})["intake_retired"] == 1


def test_the_wrong_release_names_the_switch(tmp_path: Path) -> None:
    """0.5.22 retires a prompt over decode's limit at decode's door, and an over-long one
    at prefill's intake, which 0.5.19 did not."""
    tree("0.5.22")
    # Deferred release off, as in 0.5.19 (with it on, the exact diagnosis would name
    # ``release`` first, rightly): decode's admission is the first difference.
    variant = load_variant("sglang-0.5.19-pd")
    run = conform(variant, "0.5.22", traces=200, out=tmp_path, env={DEFERRED: False})
    assert run.exit_code == 1 and run.switch == "decode_admission"
    jsonl = next(p for p in map(Path, run.files) if p.suffix == ".jsonl")
    header = json.loads(jsonl.read_text().splitlines()[0])
    assert header["meta"]["switch"] == "decode_admission"
    assert main(["replay", str(jsonl)]) in (0, 1)  # the trace is a model walk: it replays
    # With decode's door as 0.5.22's, and its Failed terminal (prefill's status is the
    # code's: 0.5.22 keeps a prefill abort over a later Success), the intake is the one
    # difference left.
    sw = dataclasses.replace(
        variant.switches, decode_admission="retire_reject", success_overwrites_abort=False
    )
    door = dataclasses.replace(variant, switches=sw)
    run = conform(door, "0.5.22", traces=200, env={DEFERRED: False})
    assert run.exit_code == 1 and run.switch == "honor_pending_reject"


def test_an_early_free_on_abort_is_what_0_5_19_does_not_0_5_22() -> None:
    """The prefill sides agree (both retire the reject); decode's free on abort decides.
    The variant's [upstream.env] turns deferred release off; the release's default is on."""
    variant = load_variant("sglang-pd-early-free-abort")
    tree("0.5.22")
    run = conform(variant, "0.5.22", traces=200, faults=True)
    assert run.exit_code == 0 and run.env_source[DEFERRED] == "variant"
    assert run.env[DEFERRED] is False
    on = conform(variant, "0.5.22", traces=200, env={DEFERRED: True})  # the default, back
    assert on.switch == "release"


def test_a_model_without_timeout_meets_the_code_s_deadline(tmp_path: Path) -> None:
    """``release = "deferred_ack"`` holds until the ACK; 0.5.22 frees at its 30 s deadline:
    a stall (time passing, no model step) shows it."""
    tree("0.5.22")
    variant = load_variant("sglang-pd-success-overwrites-abort")
    run = conform(variant, "0.5.22", traces=500, faults=True, out=tmp_path)
    assert run.switch == "release"
    header = json.loads(Path(run.files[0]).read_text().splitlines()[0])
    assert header["meta"]["stalls_after_step"]
    assert conform(variant, "0.5.22", traces=200, faults=False).exit_code == 0  # no stalls


def test_planted_early_free_in_pop_transferred_is_caught(tmp_path: Path) -> None:
    """``pop_transferred`` freeing at once (the deferred branch made unreachable): the
    0.5.22 variant, whose code holds an abort's pages, must now diverge on ``release``."""
    planted = copy_release("0.5.22", tmp_path / "python")
    decode = planted / "sglang" / "srt" / "disaggregation" / "decode.py"
    text = decode.read_text()
    pad = " " * 16
    old = (
        f"if requires_host_drain or (\n{pad}    deferrable and "
        f"decode_req.kv_receiver.abort_notified\n{pad}):"
    )
    assert old in text
    decode.write_text(text.replace(old, "if False:"))
    variant = load_variant("sglang-0.5.22-pd")
    assert conform(variant, str(tmp_path / "python"), traces=200, out=tmp_path).switch == "release"
    assert conform(variant, str(tmp_path), traces=5).exit_code == 1  # the checkout's root


def test_a_changed_signature_is_refused_naming_it(tmp_path: Path) -> None:
    planted = copy_release("0.5.22", tmp_path)
    decode = planted / "sglang" / "srt" / "disaggregation" / "decode.py"
    text = decode.read_text()
    decode.write_text(
        text.replace(
            "def _defer_release(self, decode_req: DecodeRequest)",
            "def _defer_release(self, decode_req, now)",
        )
    )
    with pytest.raises(KvproofInputError, match="_defer_release"):
        conform(load_variant("sglang-0.5.22-pd"), str(tmp_path), traces=1)


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_every_release_gets_a_verdict(version: str) -> None:
    tree(version)
    run = conform(load_variant("sglang-0.5.22-pd"), version, traces=30, faults=True)
    assert run.exit_code in (0, 1) and run.adapter


def test_the_release_modules_do_not_leak_into_sys_modules() -> None:
    tree("0.5.19")
    before = {n for n in sys.modules if n.startswith("sglang")}
    conform(load_variant("sglang-0.5.19-pd"), "0.5.19", traces=2)
    assert {n for n in sys.modules if n.startswith("sglang")} == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["sglang-0.5.19-pd", "--sglang", "0.4.0"], "unknown SGLang version"),
        (["sglang-0.5.19-pd", "--sglang", "/"], "not an SGLang tree"),
        (["vllm-nixl-fixed", "--sglang", "0.5.19"], "is a vLLM variant: pass --vllm"),
    ],
)
def test_bad_input_is_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["conform", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1


def test_an_env_key_sglang_does_not_have_is_refused(tmp_path: Path) -> None:
    tree("0.5.19")
    src = Path(load_variant("sglang-0.5.19-pd").path).read_text()
    table = 'releases = ["0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19"]\n'
    assert table in src
    bad = tmp_path / "sglang-0.5.19-pd.toml"
    bad.write_text(src.replace(table, table + "\n[upstream.env]\nSGLANG_NO_SUCH_SWITCH = true\n"))
    variant = load_variant(str(bad))  # the shape is fine: only the release knows its names
    assert variant.upstream is not None and "SGLANG_NO_SUCH_SWITCH" in variant.upstream.env
    with pytest.raises(KvproofInputError, match="SGLANG_NO_SUCH_SWITCH"):
        conform(variant, "0.5.19", traces=1)
    assert main(["conform", str(bad), "--sglang", "0.5.19"]) == 2


def test_conform_defaults_to_the_newest_listed_release(capsys: pytest.CaptureFixture[str]) -> None:
    tree("0.5.19")
    # The newest listed release is run (0.5.20 is sglang-0.5.20-pd's).
    assert main(["conform", "sglang-0.5.19-pd", "--traces", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sglang"] == "0.5.19"
    assert main(["conform", "sglang-pd-decode-radix-fixed"]) == 2  # exempt: names none
    assert "pass --sglang" in capsys.readouterr().err


def test_an_unreachable_index_says_to_pass_a_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("KVPROOF_SGLANG_WHEELS", raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    with pytest.raises(KvproofInputError, match="pass --sglang PATH"):
        fetch.cached("0.5.19")
