"""The deployment audit end to end: the incident, the fix, the window, exit codes, secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.ops.audit import Severity, audit
from kvproof.ops.audit.admission import PY, dangerous

FIX = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parents[3] / "examples" / "audit"
SECRET = "sk-kvproof-7f3a9c2e-DO-NOT-PRINT"
INCIDENT = str(FIX / "incident.toml")
FIXED = str(FIX / "fixed.toml")


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    capsys.readouterr()  # drop what earlier calls printed
    code = main(["audit", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_incident_critical_window(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json([INCIDENT], capsys)
    assert code == 1
    critical = [f for f in report["findings"] if f["severity"] == "critical"]
    assert [f["id"] for f in critical] == ["prefill-rejects-decode-admits"]
    numbers = critical[0]["numbers"]
    # The view: prompts longer than the prefill pool, within the advertised context.
    assert (numbers["window_lo"], numbers["window_hi"]) == (681_281, 1_048_576)
    (window,) = report["windows"]
    assert (window["pool"]["lo"], window["pool"]["hi"]) == (681_281, 1_048_576)
    # SGLang's own checks: prefill admits <= min(ctx-1, pool-1)-5, decode likewise.
    assert (window["engine"]["lo"], window["engine"]["hi"]) == (681_275, 1_048_570)
    assert window["variant"] == "sglang-0.5.19-pd"
    # Capping the API at the pool would leave 681,275..681,280: the cap is the engine's limit.
    assert numbers["safe_api_context"] == 681_274
    assert window["fixed_variant"] == "sglang-0.5.22-pd"
    assert window["leaks"] is True
    ids = {f["id"] for f in report["findings"]}
    assert {"pool-below-context", "sglang-pd-version"} <= ids
    assert report["worst_severity"] == "critical"


def test_incident_rich_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", INCIDENT]) == 1
    out = capsys.readouterr().out
    assert "681,281..1,048,576" in out and "critical" in out and "sglang-0.5.19-pd" in out


def test_fixed_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json([FIXED], capsys)
    assert code == 0
    assert report["findings"] == [] and report["windows"] == []
    assert report["nodes"][0]["pool_tokens"] == 2_040_000
    assert main(["audit", FIXED]) == 0
    assert "No findings" in capsys.readouterr().out


def test_examples_match_fixtures() -> None:
    assert audit([str(EXAMPLES / "incident.toml")]).worst == Severity.CRITICAL
    assert audit([str(EXAMPLES / "fixed.toml")]).findings == ()


def test_window_is_the_solver_answer_and_rechecks() -> None:
    report = audit([INCIDENT])
    (danger,) = report.dangers
    p, d = report.deployment.nodes
    for window in (danger.pool, danger.engine):
        assert window is not None
        inside = [window.lo, window.hi, (window.lo + window.hi) // 2]
        assert all(dangerous(p, d, 1_048_576, n, window.view, PY) for n in inside)
        assert not dangerous(p, d, 1_048_576, window.lo - 1, window.view, PY)
        assert not dangerous(p, d, 1_048_576, window.hi + 1, window.view, PY)


def test_files_without_toml_and_role_override(capsys: pytest.CaptureFixture[str]) -> None:
    inc = FIX / "incident"
    code, report = run_json([str(inc / "prefill-0.log"), str(inc / "decode-0.log")], capsys)
    assert code == 1
    assert report["deployment"]["advertised_context"] == 1_048_576  # largest node context
    assert report["windows"][0]["pool"]["lo"] == 681_281
    # Swap the roles: the big pool now prefills, no window remains.
    code, report = run_json(
        [
            str(inc / "prefill-0.log"),
            str(inc / "decode-0.log"),
            "--role",
            "prefill-0=decode",
            "--role",
            "decode-0.log=prefill",
        ],
        capsys,
    )
    roles = {n["name"]: n["role"] for n in report["nodes"]}
    assert roles == {"prefill-0": "decode", "decode-0": "prefill"}
    assert report["windows"] == []
    assert report["nodes"][0]["evidence"]["role"] == "--role prefill-0=decode"


def test_bad_role_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", INCIDENT, "--role", "prefill-0=leader"]) == 2
    assert main(["audit", INCIDENT, "--role", "nobody=decode"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--role nobody" in err


def test_fail_on_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", INCIDENT, "--fail-on", "critical"]) == 1
    assert main(["audit", INCIDENT, "--fail-on", "never"]) == 0
    # Only a medium finding: vLLM prefill capped at max_model_len under a larger API context.
    vllm = str(FIX / "vllm-pair.toml")
    assert main(["audit", vllm]) == 0
    assert main(["audit", vllm, "--context", "2000000"]) == 1
    assert main(["audit", vllm, "--context", "2000000", "--fail-on", "high"]) == 0
    code, report = run_json([vllm, "--context", "2000000", "--fail-on", "high"], capsys)
    assert code == 0 and report["exit_code"] == 0 and report["fail_on"] == "high"
    assert [f["severity"] for f in report["findings"]] == ["medium"]
    assert report["windows"][0]["pool"] == {
        "lo": 1_048_577,
        "hi": 2_000_000,
        "prefill_limit": 1_048_576,
        "decode_limit": 45351 * 64,
        "lengths": 951_424,
    }
    assert report["windows"][0]["variant"] is None


def test_switches_and_pair_mismatches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.log").write_text(
        (FIX / "fixed" / "prefill-0.log").read_text().replace("'page_size': 64", "'page_size': 16")
    )
    dep = tmp_path / "d.toml"
    dep.write_text(
        "advertised_context = 1048576\n"
        f'[[nodes]]\nname = "p"\nfiles = ["p.log"]\n'
        f'[[nodes]]\nname = "d"\nfiles = ["{FIX / "sglang-decode-release-off.server_info.json"}"]\n'
    )
    code, report = run_json([str(dep)], capsys)
    by_id = {f["id"]: f for f in report["findings"]}
    deferred = [f for f in report["findings"] if f["id"] == "deferred-release-disabled"]
    # Explicitly 0 on decode; unknown on prefill (log only: no environment, no version).
    assert {(tuple(f["nodes"]), f["severity"]) for f in deferred} == {
        (("d",), "high"),
        (("p",), "high"),
    }
    assert all(f["variant"] == "sglang-pd-early-free-abort" for f in deferred)
    # Release off is the variant's switch (release = "immediate"); sglang-0.5.22-pd, the
    # fixed model, does not assume failed_is_drained: no assumption is broken.
    assert all(f["assumption"] is None for f in deferred)
    # Prefill's log has the checksum on, decode's server_info has it off.
    assert by_id["checksum-one-sided"]["severity"] == "critical"
    assert by_id["page-size-mismatch"]["numbers"] == {
        "prefill_page_size": 16,
        "decode_page_size": 64,
    }
    assert code == 1


def test_conflicting_files_for_one_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dep = tmp_path / "d.toml"
    dep.write_text(
        "advertised_context = 1048576\n"
        f'[[nodes]]\nname = "p"\nfiles = ["{FIX / "incident/prefill-0.log"}", '
        f'"{FIX / "fixed/prefill-0.server_info.json"}"]\n'
    )
    assert main(["audit", str(dep)]) == 2
    err = capsys.readouterr().err
    # The version and pool follow /server_info; a setting two files disagree on is an error.
    assert "node 'p' has transfer_checksum True at " in err and "but False here" in err


def test_server_info_authoritative_for_version_and_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = (FIX / "incident/prefill-0.log").read_text().replace("0.5.19", "0.5.18")
    (tmp_path / "p.log").write_text(log)
    dep = tmp_path / "d.toml"
    info = FIX / "incident/prefill-0.server_info.json"
    dep.write_text(
        f'advertised_context = 1048576\n[[nodes]]\nname = "p"\nfiles = ["p.log", "{info}"]\n'
    )
    _, report = run_json([str(dep)], capsys)
    (node,) = report["nodes"]
    assert node["version"] == "0.5.19" and node["evidence"]["version"].endswith(": version")
    assert node["evidence"]["pool_tokens"].endswith("token_capacity")


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(
    "args",
    [
        [INCIDENT],
        [FIXED],
        [str(FIX / "incident/prefill-0.server_info.json")],
        [str(FIX / "vllm-prefill.log"), str(FIX / "sglang-decode-release-off.server_info.json")],
        [str(FIX / "truncated.server_info.json")],
        [str(FIX / "truncated-midline-sglang.log")],
    ],
)
def test_api_key_never_printed(
    args: list[str], as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    # The secret is in the input (the TOMLs name files that hold it) ...
    files = [a for a in args if not a.endswith(".toml")]
    assert not files or any(SECRET in Path(a).read_text() for a in files)
    main(["audit", *args, *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    # ... and never in the output.
    assert SECRET not in out and SECRET not in err
    assert "sk-kvproof" not in out + err


def test_unknown_version_assumed_vulnerable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for role in ("prefill", "decode"):
        text = (FIX / "incident" / f"{role}-0.log").read_text()
        (tmp_path / f"{role}.log").write_text(text.split("\n", 1)[1])  # drop the version line
    code, report = run_json([str(tmp_path / "prefill.log"), str(tmp_path / "decode.log")], capsys)
    assert code == 1
    assert report["windows"][0]["variant"] == "sglang-0.5.19-pd"
    assert report["windows"][0]["version_assumed"] is True
    severities = {f["id"]: f["severity"] for f in report["findings"]}
    assert severities["prefill-rejects-decode-admits"] == "critical"
    assert severities["sglang-pd-version"] == "medium"
