"""The CLI's contract, case by case: bad input is one line and exit 2, before any work.

Each row is argv (``{tmp}`` is a scratch folder holding the files made by ``files``), the
expected exit code and a fragment of the one line on stderr. In-process ``main`` with
capsys: no subprocess, no engine, small depths.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.spec.variant import VARIANTS_DIR

ROOT = Path(__file__).resolve().parents[3]
INCIDENT = ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl"
INCIDENT_ITF = ROOT / "traces" / "sglang-0.5.19-pd.isolation.itf.json"
LOG = ROOT / "examples" / "validate" / "sglang-0.5.22-pd.log.jsonl"
BAD_BYTES = b"\xff\xfe\x00garbage\xc3("


def files(tmp: Path) -> None:
    """The inputs the table refers to."""
    (tmp / "bin.toml").write_bytes(BAD_BYTES)
    (tmp / "bin.jsonl").write_bytes(BAD_BYTES)
    (tmp / "bin.itf.json").write_bytes(BAD_BYTES)
    (tmp / "bin.log.jsonl").write_bytes(BAD_BYTES)
    (tmp / "bindir").mkdir()
    (tmp / "bindir" / "x.toml").write_bytes(BAD_BYTES)
    (tmp / "emptydir").mkdir()
    (tmp / "afile").write_text("x\n")
    (tmp / "outdir").mkdir()
    itf = INCIDENT_ITF.read_text()
    (tmp / "cut.itf.json").write_text(itf[: len(itf) // 2])
    (tmp / "plain.itf.json").write_text("hello\n")
    (tmp / "list.itf.json").write_text("[1, 2]\n")
    (tmp / "meta5.itf.json").write_text('{"#meta": 5, "states": []}\n')
    lines = INCIDENT.read_text().splitlines()
    (tmp / "short.jsonl").write_text("\n".join(lines[:-2]) + "\n")  # cut at a line boundary
    unknown = [lines[0], json.dumps({"step": 1, "action": "teleport", "args": {"r": 0}})]
    header = json.loads(unknown[0])
    header["steps"] = 1
    unknown[0] = json.dumps(header)
    (tmp / "unknown.jsonl").write_text("\n".join(unknown) + "\n")
    header["meta"] = "x"  # read with dict() before it was checked: exit 3
    (tmp / "meta.jsonl").write_text("\n".join([json.dumps(header), unknown[1]]) + "\n")
    log = LOG.read_text().splitlines()
    (tmp / "short.log.jsonl").write_text("\n".join(log[:-3]) + "\n")
    (tmp / "unknown.log.jsonl").write_text(
        '{"kvproof_log": 1, "variant": "sglang-0.5.22-pd"}\n{"event": "teleport", "rid": 0}\n'
    )
    (tmp / "binproto.py").write_bytes(BAD_BYTES)
    (tmp / "syntax.py").write_text("def broken(:\n")
    (tmp / "raises.py").write_text("raise RuntimeError('configuration missing')\n")


V = "sglang-0.5.22-pd"
CASES: list[tuple[str, list[str], int, str]] = [
    # 1. tracebacks on bad input
    ("variant-not-utf8", ["check", "{tmp}/bin.toml"], 2, "not UTF-8"),
    ("variants-dir-not-utf8", ["check", "--all", "--variants-dir", "{tmp}/bindir"], 2, "UTF-8"),
    ("jsonl-not-utf8", ["replay", "{tmp}/bin.jsonl"], 2, "not UTF-8"),
    ("itf-not-utf8", ["replay", "{tmp}/bin.itf.json"], 2, "not UTF-8"),
    ("itf-not-utf8-variant", ["replay", "{tmp}/bin.itf.json", "--variant", V], 2, "UTF-8"),
    ("log-not-utf8", ["validate", "{tmp}/bin.log.jsonl"], 2, "not UTF-8"),
    ("itf-truncated", ["replay", "{tmp}/cut.itf.json"], 2, "malformed JSON"),
    ("itf-plain-text", ["replay", "{tmp}/plain.itf.json"], 2, "malformed JSON"),
    ("itf-list", ["replay", "{tmp}/list.itf.json"], 2, "expected a JSON object"),
    ("itf-meta-5", ["replay", "{tmp}/meta5.itf.json"], 2, "'#meta' must be an object"),
    ("check-out-file", ["check", V, "--depth", "2", "--out", "{tmp}/afile"], 2, "--out"),
    ("check-junit-dir", ["check", V, "--depth", "2", "--junit", "{tmp}/outdir"], 2, "--junit"),
    ("check-sarif-under-file", ["check", V, "--sarif", "{tmp}/afile/x.sarif"], 2, "--sarif"),
    ("explore-dot-dir", ["explore", V, "--dot", "{tmp}/outdir"], 2, "--dot"),
    ("explore-graphml-bad", ["explore", V, "--graphml", "{tmp}/afile/g.xml"], 2, "--graphml"),
    ("fuzz-out-file", ["fuzz", V, "--out", "{tmp}/afile"], 2, "--out"),
    ("protocol-binary", ["check", V, "--protocol", "{tmp}/binproto.py:build"], 2, "--protocol"),
    ("protocol-syntax", ["check", V, "--protocol", "{tmp}/syntax.py:build"], 2, "syntax"),
    ("protocol-raises", ["check", V, "--protocol", "{tmp}/raises.py:b"], 2, "configuration"),
    ("probe-timeout", ["probe", "http://127.0.0.1:9", "--timeout", "-1"], 2, "--timeout"),
    # 2. wrong exit codes or messages
    ("prove-all-nodir", ["prove", "--all", "--variants-dir", "{tmp}/nope"], 2, "no such folder"),
    ("check-all-nodir", ["check", "--all", "--variants-dir", "{tmp}/nope"], 2, "no such folder"),
    ("check-all-empty", ["check", "--all", "--variants-dir", "{tmp}/emptydir"], 2, "no *.toml"),
    ("check-all-file", ["check", "--all", "--variants-dir", "{tmp}/afile"], 2, "not a folder"),
    ("check-name-nodir", ["check", V, "--variants-dir", "{tmp}/nope"], 2, "no such folder"),
    ("depth-0", ["check", V, "--depth", "0"], 2, "--depth"),
    ("prove-timeout-0", ["prove", V, "--timeout", "0"], 2, "--timeout"),
    ("prove-timeout-neg", ["prove", V, "--timeout", "-1"], 2, "--timeout"),
    ("explore-seconds-0", ["explore", V, "--max-seconds", "0"], 2, "--max-seconds"),
    ("explore-seconds-neg", ["explore", V, "--max-seconds", "-1"], 2, "--max-seconds"),
    ("prove-and-no-prove", ["check", V, "--prove", "--no-prove"], 2, "not allowed with"),
    ("all-and-name", ["check", "--all", V], 2, "not both"),
    ("serve-transfer", ["serve", "--transfer-us-per-page", "-5"], 2, "--transfer-us-per-page"),
    ("serve-bad-host", ["serve", "--host", "no.such.host.invalid"], 2, "--host"),
    ("trace-truncated", ["replay", "{tmp}/short.jsonl"], 2, "truncated"),
    ("log-truncated", ["validate", "{tmp}/short.log.jsonl"], 2, "truncated"),
    ("replay-unknown-action", ["replay", "{tmp}/unknown.jsonl"], 2, "unknown action"),
    ("trace-meta-not-object", ["replay", "{tmp}/meta.jsonl"], 2, "'meta' must be an object"),
    ("validate-unknown-event", ["validate", "{tmp}/unknown.log.jsonl"], 2, "unknown event"),
    ("no-command", [], 2, "COMMAND"),
    ("unknown-flag", ["check", "--bogus"], 2, "unrecognized"),
    ("huge-depth", ["check", V, "--depth", "99999999999999999999"], 2, "--depth"),
    ("missing-variant", ["check", "nosuch"], 2, "no such variant"),
]


@pytest.mark.parametrize(
    ("argv", "code", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, fragment: str
) -> None:
    files(tmp_path)
    got = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out, err = capsys.readouterr()
    assert got == code, err
    assert "Traceback" not in err + out
    assert err.count("\n") == 1 and err.startswith(("kvproof", "kvproof ")), err
    assert fragment.lower() in err.lower(), err
    assert not any((tmp_path / "outdir").iterdir())  # nothing half-written


def test_serve_port_in_use_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--port {port}" in err


def test_variants_dir_works_for_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "--variants-dir", str(VARIANTS_DIR), "--json"]) == 0
    names = {v["name"] for v in json.loads(capsys.readouterr().out)}
    assert "sglang-0.5.19-pd" in names


def test_check_variant_exit_1_and_junit_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "r.xml"
    code = main(["check", "sglang-0.5.19-pd", "--depth", "8", "--no-prove", "--junit", str(junit)])
    assert code == 1  # check VARIANT: a violation
    root = junit.read_text()
    assert 'failures="0"' not in root.split("\n")[1]
    out = capsys.readouterr().out
    assert not out.startswith("\n") and "VIOLATED" in out


def test_help_states_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes" in out and "2  bad input" in out
    assert main(["check", "--help"]) == 0
    assert "exit codes" in capsys.readouterr().out
