"""Every input format the audit reads, and every way a file can be unreadable (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.audit.formats import read_facts
from kvproof.checker.cli import main

FIX = Path(__file__).parent / "fixtures" / "audit"


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
    }


def test_sglang_log_switches() -> None:
    got = facts("fixed/decode-0.log")
    assert got["role"] == "decode" and got["pool_tokens"] == 2097152
    assert got["deferred_release"] is True and got["transfer_checksum"] is True


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
    }


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
