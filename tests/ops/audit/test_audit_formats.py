"""Every input format the audit reads, and every way a file can be unreadable (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.ops.audit.formats import read_facts

FIX = Path(__file__).parent / "fixtures"


def facts(name: str) -> dict[str, object]:
    parsed = read_facts(str(FIX / name))
    return {
        "format": parsed.format,
        "engine": parsed.engine,
        **{k: f.value for k, f in parsed.facts.items()},
    }


def test_sglang_log() -> None:
    got = facts("incident/prefill-0.log")
    assert got == {
        "format": "sglang-log",
        "engine": "sglang",
        "version": "0.5.19",
        "role": "prefill",
        "pool_tokens": 681280,
        "context_len": 1048576,
        "page_size": 64,
        "transfer_backend": "mooncake",
        # v0.5.19's ServerArgs has no disaggregation_enable_kv_checksum: off.
        "transfer_checksum": False,
    }


def test_sglang_newer_log_format() -> None:
    # server_args={...} (engine.py: resolved_dict()), a Python dict literal.
    got = facts("fixed/prefill-0.log")
    assert got["format"] == "sglang-log"
    assert got["role"] == "prefill" and got["page_size"] == 64
    assert got["pool_tokens"] == 2040000 and got["context_len"] == 1048576
    assert got["transfer_checksum"] is True and got["transfer_backend"] == "mooncake"
    assert got["decode_radix_cache"] is False and got["reserved_decode_tokens"] == 512
    assert "version" not in got  # SGLang prints none; /server_info has it


def test_sglang_server_info() -> None:
    got = facts("incident/prefill-0.server_info.json")
    assert got["format"] == "sglang-server-info"
    assert (got["version"], got["role"], got["pool_tokens"], got["max_req_input_len"]) == (
        "0.5.19",
        "prefill",
        681280,
        681274,
    )
    # SGLang: max_req_input_len = min(context_len - 1, max_total_num_tokens - 1) - 5
    assert got["max_req_input_len"] == min(1048576 - 1, 681280 - 1) - 5


def test_sglang_server_info_token_capacity_smallest_rank() -> None:
    got = facts("sglang-decode-release-off.server_info.json")
    assert got["pool_tokens"] == 2088960  # no max_total_num_tokens: min over internal_states
    assert got["deferred_release"] is False and got["transfer_checksum"] is False
    assert got["env_exposed"] is True


def test_sglang_server_info_env_vars() -> None:
    got = facts("fixed/decode-0.server_info.json")
    assert got["deferred_release"] is True
    assert got["release_timeout_s"] == 300.0 and got["waiting_timeout_s"] == 300.0
    assert "heartbeat_interval_s" not in got  # not set: the node resolves the default
    # Without env_vars the environment is unknown: no fact at all.
    bare = facts("incident/prefill-0.server_info.json")
    assert "env_exposed" not in bare and "deferred_release" not in bare


def test_env_files() -> None:
    script = facts("fixed/prefill-0.launch.sh")
    assert script["format"] == "env-file" and script["role"] == "prefill"
    assert script["transfer_checksum"] is True and script["deferred_release"] is True
    assert script["release_timeout_s"] == 300.0
    pod = facts("fixed/decode-0.pod.yaml")
    assert pod["format"] == "env-file" and pod["deferred_release"] is True
    assert pod["waiting_timeout_s"] == 300.0


def test_sglang_metrics_slowest_transfer() -> None:
    got = facts("fixed/decode-0.metrics")
    # 1936 of 1938 transfers within 2500 ms: at least one took longer than 2.5 s.
    assert got == {"format": "sglang-metrics", "engine": "sglang", "slowest_transfer_s": 2.5}


def test_vllm_log() -> None:
    got = facts("vllm-prefill.log")
    assert got == {
        "format": "vllm-log",
        "engine": "vllm",
        "version": "0.11.0",
        "role": "prefill",
        "pool_tokens": 2902470,
        "context_len": 1048576,
        "page_size": 64,
        "kv_connector": "NixlConnector",
    }


def test_vllm_lease_log_and_nixl_metrics() -> None:
    got = facts("vllm-prefill-lease.log")
    assert got["kv_lease_duration_s"] == 2.0 and got["lease_expired_reads"] == 2
    metrics = facts("vllm-decode-nixl.metrics")
    assert metrics["slowest_transfer_s"] == 5.0  # 1411 of 1414 within 5 s


def test_vllm_metrics() -> None:
    got = facts("vllm-decode.metrics")
    assert got == {
        "format": "vllm-metrics",
        "engine": "vllm",
        "pool_tokens": 45351 * 64,
        "page_size": 64,
    }


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("truncated.server_info.json", 23),
        ("truncated-sglang.log", 8),
        ("truncated-midline-sglang.log", 13),
        ("truncated.metrics", 16),
        ("garbage.txt", 1),
    ],
)
def test_unreadable_exit_2_with_line(
    name: str, line: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(FIX / name)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{FIX / name}:{line}: " in err


def test_binary_and_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = tmp_path / "core.bin"
    blob.write_bytes(b"ELF\n\n\x00\x01\x02garbage")
    assert main(["audit", str(blob)]) == 2
    assert f"{blob}:3: " in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "nope.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_bad_deployment_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "d.toml"
    bad.write_text('name = "x"\nadvertised_context = 10\n[[nodes]\n')
    assert main(["audit", str(bad)]) == 2
    assert f"{bad}:3: malformed TOML" in capsys.readouterr().err
    bad.write_text('advertised_context = 10\n[[nodes]]\nname = "p"\nfiles = ["a"]\ncolour = 1\n')
    assert main(["audit", str(bad)]) == 2
    assert f"{bad}: nodes[0].colour: unknown key" in capsys.readouterr().err


def test_newer_log_with_non_literal_values(tmp_path: Path) -> None:
    # resolved_dict() may hold values whose repr is not Python (an enum): read key by key.
    text = (FIX / "fixed/prefill-0.log").read_text()
    log = tmp_path / "p.log"
    log.write_text(
        text.replace("'load_format': 'auto'", "'load_format': <LoadFormat.AUTO: 'auto'>")
    )
    got = read_facts(str(log)).facts
    assert got["role"].value == "prefill" and got["page_size"].value == 64
    assert got["transfer_checksum"].value is True


def test_truncated_newer_log_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, rest = (FIX / "fixed/prefill-0.log").read_text().split("\n", 1)
    log = tmp_path / "p.log"
    log.write_text(first[:400] + "\n" + rest)
    assert main(["audit", str(log)]) == 2
    err = capsys.readouterr().err
    assert f"{log}:1: incomplete 'server_args=' line" in err and "sk-kvproof" not in err
