"""The audit reads SGLang's real PD settings and vLLM's NIXL lease, end to end via the CLI.

Each test starts from the v0.5.22 deployment done right (fixtures/fixed.toml: newer
log format, /server_info with env_vars, a launch script, a pod spec, /metrics) and changes
one thing in a copy, so a broken rule shows as a clean audit of a broken deployment.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvproof.checker.cli import main

FIX = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parents[3]
SECRETS = ("sk-kvproof-7f3a9c2e-DO-NOT-PRINT", "hf_kvproofSECRETdoNotPrint", "tok3nSECRET")


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["audit", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def variant_of(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> str:
    """A copy of the done-right deployment with ``edits`` (file name -> replacements)."""
    shutil.copytree(FIX / "fixed", tmp_path / "fixed")
    shutil.copy(FIX / "fixed.toml", tmp_path / "fixed.toml")
    for name, pairs in edits.items():
        path = tmp_path / name
        text = path.read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new)
        path.write_text(text)
    return str(tmp_path / "fixed.toml")


def by_id(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["id"] == rule]


@pytest.mark.parametrize("toml", [FIX / "fixed.toml", ROOT / "examples/audit/fixed.toml"])
def test_v0522_done_right_audits_clean(toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json([str(toml)], capsys)
    assert code == 0 and report["findings"] == []
    for node in report["nodes"]:
        assert node["version"] == "0.5.22"
        assert node["transfer_checksum"] is True and node["deferred_release"] is True
        assert node["env_exposed"] is True and node["release_timeout_s"] == 300.0
    decode = report["nodes"][1]
    assert decode["slowest_transfer_s"] == 2.5 and decode["transfer_backend"] == "mooncake"


def test_checksum_off_on_decode_is_critical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = variant_of(
        tmp_path,
        {
            "fixed/decode-0.log": [
                (
                    "'disaggregation_enable_kv_checksum': True",
                    "'disaggregation_enable_kv_checksum': False",
                )
            ],
            "fixed/decode-0.server_info.json": [
                (
                    '"disaggregation_enable_kv_checksum": true',
                    '"disaggregation_enable_kv_checksum": false',
                )
            ],
        },
    )
    code, report = run_json([toml], capsys)
    assert code == 1
    (finding,) = [f for f in report["findings"] if f["severity"] == "critical"]
    assert finding["id"] == "checksum-one-sided"
    assert "disaggregation_enable_kv_checksum" in finding["title"]
    assert "--disaggregation-enable-kv-checksum" in finding["action"]
    # On prefill only: no catalog variant models that side (decode-only is
    # test_audit_names.py's case), and which roles check is a switch, not an assumption.
    assert finding["variant"] is None and finding["assumption"] is None
    assert main(["audit", toml]) == 1
    out = capsys.readouterr().out
    assert "checksum-one-sided" in out and "disaggregation_enable_kv_checksum" in out


def test_newer_format_prefill_log_alone(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = run_json([str(FIX / "fixed/prefill-0.log")], capsys)
    (node,) = report["nodes"]
    assert node["role"] == "prefill" and node["page_size"] == 64
    assert node["pool_tokens"] == 2_040_000 and node["transfer_checksum"] is True


def test_invented_option_names_appear_nowhere() -> None:
    # Built by concatenation so that this file does not contain them either.
    invented = ["disaggregation_" + "deferred_kv_release", "disaggregation_" + "transfer_checksum"]
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
    hits = []
    for path in ROOT.rglob("*"):
        if not path.is_file() or skip & set(path.parts) or path.suffix in (".pyc", ".so"):
            continue
        if any(part.endswith(".egg-info") for part in path.parts):
            continue
        text = path.read_text(errors="ignore")
        hits += [f"{path.relative_to(ROOT)}: {name}" for name in invented if name in text]
    assert hits == []


def test_env_not_exposed_on_v0522(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edits = {}
    for role in ("prefill", "decode"):
        text = (FIX / f"fixed/{role}-0.server_info.json").read_text()
        info = json.loads(text)
        del info["internal_states"][0]["env_vars"]
        edits[f"fixed/{role}-0.server_info.json"] = [(text, json.dumps(info, indent=2))]
    edits["fixed.toml"] = [
        (', "fixed/prefill-0.launch.sh"', ""),
        ('    "fixed/decode-0.pod.yaml",\n', ""),
    ]
    code, report = run_json([variant_of(tmp_path, edits)], capsys)
    (deferred,) = by_id(report, "deferred-release-disabled")
    # v0.5.22 turned it on by default: unknown is info, and the report says how to expose it.
    assert deferred["severity"] == "info" and "SGLANG_EXPOSE_OWN_ENV_VARS=1" in deferred["action"]
    assert all(n["deferred_release"] is None and not n["env_exposed"] for n in report["nodes"])
    # The release timeout defaults to 30 s against a 300 s waiting timeout.
    (timeout,) = by_id(report, "release-timeout-short")
    assert timeout["severity"] == "medium" and timeout["assumption"] == "bounded_transfer"
    assert timeout["numbers"]["release_timeout_s"] == 30.0
    assert code == 1


def test_unknown_deferred_release_on_old_version_is_high(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, report = run_json([str(FIX / "incident.toml")], capsys)
    (deferred,) = by_id(report, "deferred-release-disabled")
    assert deferred["severity"] == "high" and set(deferred["nodes"]) == {"prefill-0", "decode-0"}
    assert "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1" in deferred["action"]


def test_release_timeout_shorter_than_slowest_transfer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    timeout = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT"
    toml = variant_of(
        tmp_path,
        {
            "fixed/decode-0.server_info.json": [(f'"{timeout}": "300"', f'"{timeout}": "2"')],
            "fixed/decode-0.pod.yaml": [
                (f'{timeout}\n      value: "300"', f'{timeout}\n      value: "2"')
            ],
        },
    )
    code, report = run_json([toml], capsys)
    (finding,) = by_id(report, "release-timeout-short")
    assert code == 1 and finding["severity"] == "high"
    assert finding["numbers"] == {
        "release_timeout_s": 2.0,
        "waiting_timeout_s": 300.0,
        "slowest_transfer_s": 2.5,
    }
    assert (finding["variant"], finding["assumption"]) == (
        "sglang-pd-deferred-timeout",
        "bounded_transfer",
    )
    assert any("decode-0.metrics" in e for e in finding["evidence"])


def test_decode_radix_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "disaggregation_decode_enable_radix_cache"
    toml = variant_of(
        tmp_path,
        {
            "fixed/decode-0.log": [(f"'{key}': False", f"'{key}': True")],
            "fixed/decode-0.server_info.json": [(f'"{key}": false', f'"{key}": true')],
        },
    )
    code, report = run_json([toml], capsys)
    (finding,) = by_id(report, "decode-radix-cache")
    assert code == 1 and finding["severity"] == "medium"
    assert (finding["variant"], finding["assumption"]) == (
        "sglang-pd-decode-radix-race",
        None,
    )


def test_mori_before_v0522(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edits = {
        f"fixed/{name}": [("mooncake", "mori")]
        + ([('"version": "0.5.22"', '"version": "0.5.21"')] if name.endswith(".json") else [])
        for name in (
            "prefill-0.log",
            "decode-0.log",
            "prefill-0.server_info.json",
            "decode-0.server_info.json",
            "prefill-0.launch.sh",
        )
    }
    # v0.5.21: deferred release is read from the exposed environment (set to 1).
    code, report = run_json([variant_of(tmp_path, edits)], capsys)
    (finding,) = by_id(report, "transfer-backend-no-deferred-ack")
    assert code == 1 and finding["severity"] == "high"
    # No drain ACK is the release switch of sglang-pd-early-free-abort, not an assumption.
    assert (finding["variant"], finding["assumption"]) == ("sglang-pd-early-free-abort", None)
    (version,) = by_id(report, "sglang-pd-version")
    assert version["severity"] == "low"  # #38935 is in, v0.5.22 recommended


def test_vllm_lease_read_after_expiry(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json([str(FIX / "vllm-lease.toml")], capsys)
    assert code == 1
    (expired,) = by_id(report, "lease-read-after-expiry")
    assert expired["severity"] == "high" and expired["numbers"]["lease_expired_reads"] == 2
    # The assumption vllm-nixl-fixed lists and vllm-stale-block-lease drops.
    assert (expired["variant"], expired["assumption"]) == (
        "vllm-stale-block-lease",
        "lease_outlives_read",
    )
    assert "kv_lease_duration" in expired["action"]
    (short,) = by_id(report, "lease-shorter-than-transfer")
    assert short["numbers"] == {"kv_lease_duration_s": 2.0, "slowest_transfer_s": 5.0}
    prefill = report["nodes"][0]
    assert (prefill["kv_connector"], prefill["transfer_mode"]) == ("NixlConnector", "pull")
    # The plain vLLM pair shows no expiry and the default 30 s lease.
    code, report = run_json([str(FIX / "vllm-pair.toml")], capsys)
    assert code == 0 and report["nodes"][0]["kv_lease_duration_s"] == 30.0


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (
            (
                '"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "300"',
                '"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "tok3nSECRET"',
            ),
            "internal_states[0].env_vars.SGLANG_DISAGGREGATION_WAITING_TIMEOUT",
        ),
        (
            (
                '"disaggregation_enable_kv_checksum": true',
                '"disaggregation_enable_kv_checksum": "tok3nSECRET"',
            ),
            "disaggregation_enable_kv_checksum",
        ),
    ],
)
def test_wrong_type_names_file_and_key(
    tmp_path: Path, edit: tuple[str, str], key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = variant_of(tmp_path, {"fixed/decode-0.server_info.json": [edit]})
    assert main(["audit", toml]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"decode-0.server_info.json: {key}" in err and "tok3nSECRET" not in err


def test_unknown_keys_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = variant_of(
        tmp_path,
        {
            "fixed/decode-0.server_info.json": [
                ('"version"', '"colour": [1, {"x": null}],\n  "version"')
            ]
        },
    )
    assert main(["audit", toml]) == 0


@pytest.mark.parametrize("as_json", [False, True])
def test_secrets_never_printed(
    tmp_path: Path, as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    # A node name carrying a URL with credentials, the launch script's HF_TOKEN, the api_key.
    toml = variant_of(
        tmp_path,
        {
            "fixed.toml": [
                ('name = "decode-0"', 'name = "https://ops:tok3nSECRET@decode-0?token=tok3nSECRET"')
            ]
        },
    )
    main(["audit", toml, *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert out and not any(s in out + err for s in SECRETS)


@pytest.mark.parametrize("toml", ["fixed.toml", "incident.toml", "vllm-lease.toml"])
def test_text_fits_80_columns(
    toml: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    main(["audit", str(FIX / toml)])
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out  # nothing cut to a few characters
    for value in ("1,048,576", "KV pool", "page size"):
        assert value in out


def test_json_adds_fields_only(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = run_json([str(FIX / "incident.toml")], capsys)
    assert report["schema"] == "kvproof.audit/1"
    old_node = {
        "name",
        "role",
        "engine",
        "version",
        "pool_tokens",
        "context_len",
        "page_size",
        "max_input_tokens",
        "deferred_release",
        "transfer_checksum",
        "sources",
        "evidence",
    }
    assert all(old_node <= set(n) for n in report["nodes"])
    old_finding = {"id", "severity", "title", "nodes", "numbers", "action", "evidence"}
    assert all(old_finding | {"variant", "assumption"} <= set(f) for f in report["findings"])


@pytest.mark.parametrize(("version", "leaks"), [("0.5.20", True), ("0.5.21", False)])
def test_window_from_v0521_rejects_cleanly(
    version: str, leaks: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The incident's pools: from v0.5.21 prefill's intake retires the pending reject, no
    # leak (medium); v0.5.20 still queues the 1-token stub (the wheel's
    # PrefillBootstrapQueue.add) and is its own variant (it retires the stub after its
    # forward, but an abort still frees pages under a posted write): it leaks (critical).
    shutil.copytree(FIX / "incident", tmp_path / "incident")
    shutil.copy(FIX / "incident.toml", tmp_path / "incident.toml")
    for path in (tmp_path / "incident").iterdir():
        path.write_text(path.read_text().replace("0.5.19", version))
    code, report = run_json([str(tmp_path / "incident.toml")], capsys)
    (window,) = report["windows"]
    want = "sglang-0.5.20-pd" if leaks else "sglang-0.5.22-pd"
    assert window["variant"] == want and window["leaks"] is leaks
    (finding,) = by_id(report, "prefill-rejects-decode-admits")
    assert finding["severity"] == ("critical" if leaks else "medium") and code == 1
