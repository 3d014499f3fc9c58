"""``kvproof advise``: the release's code matched to a variant, its verdicts, the fix.

The matching runs each release's own code (``conform``), so the answers below come from the
wheels (cached; skipped with the reason offline); bad input is refused before any of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.report.engine_words import uses_model_names
from kvproof.checker.upstream import fetch
from kvproof.ops.advise.request import deployment
from kvproof.ops.advise.run import advise
from kvproof.spec.errors import KvproofInputError

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


def _cached(*versions: str, engine: str = "sglang") -> None:
    from kvproof.checker.conform.vllm import fetch as vllm_fetch

    for version in versions:
        try:
            (vllm_fetch if engine == "vllm" else fetch).cached(version)
        except KvproofInputError as exc:
            pytest.skip(f"no cached {engine} {version} wheel and no index: {exc}")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["advise", "tgi==1.0"], "unknown engine 'tgi'"),
        (["advise", "sglang==0.4.0"], "unknown SGLang version '0.4.0'"),
        (["advise", "sglang0.5.22"], "expected ENGINE==VERSION"),
        (["advise", "sglang==0.5.22", "--env", "NOEQUALS"], "expected NAME=VALUE"),
        (["advise", "sglang==0.5.22", "--env", "SGLANG_NOT_A_NAME=1"], "does not read the env"),
        (["advise", "sglang==0.5.22", "--env", f"{DEFERRED}=maybe"], "is a boolean"),
        (["advise", "sglang==0.5.22", "--server-arg", "no_such_arg=1"], "has no server arg"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if "0.5.22" in argv[1]:
        _cached("0.5.22")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]


def test_server_info_that_is_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "server_info.json"
    bad.write_text("{not json")
    assert main(["advise", "sglang==0.5.22", "--server-info", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "malformed JSON" in err[0]


def test_server_info_version_and_env_are_read(tmp_path: Path) -> None:
    _cached("0.5.22")
    info = {
        "version": "0.5.22",
        "max_total_num_tokens": 4096,
        "disaggregation_transfer_backend": "mooncake",
        "internal_states": [{"env_vars": {DEFERRED: "false"}}],
    }
    path = tmp_path / "server_info.json"
    path.write_text(json.dumps(info))
    dep = deployment(None, server_info=path)
    assert dep.version == "0.5.22" and dep.env == {DEFERRED: False}
    assert dep.server_args == {"disaggregation_transfer_backend": "mooncake"}
    with pytest.raises(KvproofInputError, match=r"not 0\.5\.21"):
        deployment("sglang==0.5.21", server_info=path)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.19"])
def test_incident_releases_are_unsafe_and_an_upgrade_fixes_them(version: str) -> None:
    _cached(version, "0.5.21")
    run = advise(deployment(f"sglang=={version}"), traces=50)
    assert run.match.variant == "sglang-0.5.19-pd" and run.match.by_table
    assert run.exit_code == 1 and not run.safe
    assert run.assessment is not None
    iso = next(f for f in run.assessment.findings if f.name == "isolation")
    assert iso.verdict == "violated" and iso.story is not None
    # the incident in engine words: the pending reject, the placeholder, the 200
    assert "pending abort" in iso.story and "placeholder" in iso.story and "200" in iso.story
    assert not uses_model_names(iso.story)
    # 0.5.21 is sglang-0.5.21-pd (a late ABORT_ACK counts): unsafe, so the fix is 0.5.22
    assert run.fix is not None and run.fix.change.startswith("upgrade to sglang==0.5.22")
    assert run.fix.variant == "sglang-0.5.22-pd" and run.fix.safe


@pytest.mark.slow
def test_0_5_20_is_unsafe_without_the_incident_s_200() -> None:
    """0.5.20 retires the over-long prompt's stub after its forward (sglang-0.5.20-pd): no
    200 for it (reject_final holds), but the immediate release still lets an aborted
    request's write land in a page another request reads."""
    _cached("0.5.20", "0.5.22")
    run = advise(deployment("sglang==0.5.20"), traces=50)
    assert run.match.variant == "sglang-0.5.20-pd" and run.match.by_table
    assert run.exit_code == 1 and not run.safe
    assert run.assessment is not None
    verdicts = {f.name: f.verdict for f in run.assessment.findings}
    assert verdicts["isolation"] == "violated" and verdicts["reject_final"] == "holds"
    iso = next(f for f in run.assessment.findings if f.name == "isolation")
    assert iso.story is not None and "placeholder" not in iso.story
    assert run.fix is not None and run.fix.variant == "sglang-0.5.22-pd" and run.fix.safe


@pytest.mark.slow
def test_0_5_22_is_safe_under_bounded_transfer() -> None:
    _cached("0.5.22")
    run = advise(deployment("sglang==0.5.22"), traces=50)
    assert run.match.variant == "sglang-0.5.22-pd"
    assert "sglang-pd-deferred-timeout" in run.match.same_code
    assert run.exit_code == 0 and run.fix is None
    assert run.assessment is not None
    bounded = next(a for a in run.assessment.assumptions if a.name == "bounded_transfer")
    assert bounded.needed and bounded.without_it == "no_stray_write" and bounded.story
    said = run.meanings["bounded_transfer"]
    assert "30 s" in said and "300 s" in said  # the release timeout and the waiting timeout


@pytest.mark.slow
def test_0_5_22_without_deferred_release_frees_early(tmp_path: Path) -> None:
    _cached("0.5.22")
    run = advise(deployment("sglang==0.5.22", env=[f"{DEFERRED}=false"]), traces=50)
    assert run.match.variant == "sglang-pd-early-free-abort"
    assert run.exit_code == 1
    assert run.fix is not None and DEFERRED in run.fix.change
    assert run.fix.variant == "sglang-0.5.22-pd" and run.fix.safe
    doc = json.loads(json.dumps(run.to_json()))  # --json: plain data
    assert doc["verdict"] == "unsafe" and doc["match"]["variant"] == run.match.variant
    # the text names no model field; --raw does
    from kvproof.ops.advise.render import lines

    text = "\n".join(lines(doc))
    assert "early" not in doc["fix"]["change"] and not uses_model_names(text)
    assert max(len(line) for line in text.splitlines()) <= 200
    assert uses_model_names("\n".join(lines(doc, raw=True)))
    from kvproof.ops.advise.html import advise_page

    html = advise_page(doc)
    assert "UNSAFE" in html and 'ol class="engine-steps"' in html
    assert not uses_model_names(html.split("<style>")[0] + html.split("</style>")[1])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--env", "VLLM_X=1"], "not environment variables"),
        (["--server-arg", "block_size=16"], "not block_size"),
        (["--server-arg", "transfer_mode=sideways"], "one of pull, push"),
    ],
)
def test_vllm_bad_input(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "vllm==0.34.0", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]


@pytest.mark.slow
def test_vllm_0_34_pull_reads_after_the_lease() -> None:
    """0.34.0's own code (conform --vllm) in pull mode: prefill frees on lease expiry."""
    _cached("0.34.0", engine="vllm")
    run = advise(deployment("vllm==0.34.0"), traces=50)
    assert run.match.variant == "vllm-0.34-nixl-pull" and run.match.by_table
    assert "vllm-stale-block-lease" in run.match.same_code + run.match.also
    assert run.exit_code == 1 and run.assessment is not None
    iso = next(f for f in run.assessment.findings if f.name == "isolation")
    assert iso.verdict == "violated" and iso.story and "expired" in iso.story
    assert not uses_model_names(iso.story)


def test_the_incident_server_info_names_its_release() -> None:
    """The audit example's /server_info (no exposed environment): 0.5.19, Mooncake."""
    _cached("0.5.19")
    path = (
        Path(__file__).resolve().parents[3] / "examples/audit/incident/prefill-0.server_info.json"
    )
    dep = deployment(None, server_info=path)
    assert dep.version == "0.5.19" and dep.env == {}
    assert dep.server_args["disaggregation_transfer_backend"] == "mooncake"
