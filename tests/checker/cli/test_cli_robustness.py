"""Robustness: Hypothesis throws argv and input files at every subcommand.

Random bytes, truncated valid files, JSON of the wrong shape, huge and negative numbers,
output paths that are folders or lie under a file. Whatever comes, the CLI exits 0, 1 or 2,
prints no traceback, says at most 3 lines on stderr when it exits 2, and leaves no
half-written output. In-process ``main`` (cheap), small depths and budgets; commands that
would serve forever or reach the network get an address that refuses at once.
"""

from __future__ import annotations

import itertools
import json
import socket
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvproof.checker.cli import main

ROOT = Path(__file__).resolve().parents[3]
VALID = {
    "toml": ROOT / "spec" / "variants" / "sglang-0.5.19-pd.toml",
    "jsonl": ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl",
    "itf.json": ROOT / "traces" / "sglang-0.5.19-pd.isolation.itf.json",
    "log.jsonl": ROOT / "examples" / "validate" / "sglang-0.5.22-pd.log.jsonl",
}
NAMES = ["sglang-0.5.19-pd", "sglang-0.5.22-pd", "vllm-nixl-fixed", "nosuch", "", "-x", "../x"]
NUMBERS = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "3", "1e999", "nan", "inf", "x", "", "2.5"]),
    st.integers(-(10**30), 10**30).map(str),
)
COUNTER = itertools.count()
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    # nested_given: ``fuzz`` shrinks with Hypothesis itself, inside this @given.
    suppress_health_check=list(HealthCheck),
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with ends: refuses at once


@st.composite
def input_file(draw: st.DrawFn, tmp: Path, kind: str) -> str:
    """A path to: the valid file, a truncated copy, random bytes, wrong-shaped JSON, a
    folder, or nothing."""
    how = draw(st.sampled_from(["valid", "cut", "bytes", "json", "dir", "missing"]))
    path = tmp / f"in{next(COUNTER)}.{kind}"
    src = VALID[kind].read_bytes()
    if how == "valid":
        path.write_bytes(src)
    elif how == "cut":
        path.write_bytes(src[: draw(st.integers(0, len(src)))])
    elif how == "bytes":
        path.write_bytes(draw(st.binary(max_size=200)))
    elif how == "json":
        value = draw(
            st.sampled_from(["[1, 2]", '{"#meta": 5}', "5", "null", '{"kvproof_trace": 1}'])
        )
        path.write_text(value + "\n")
    elif how == "dir":
        path.mkdir()
    return str(path)


@st.composite
def output_path(draw: st.DrawFn, tmp: Path, flag: str) -> list[str]:
    how = draw(st.sampled_from(["fresh", "file", "dir", "under-file", "none"]))
    if how == "none":
        return []
    target = tmp / f"out{next(COUNTER)}"
    if how == "file":
        target.write_text("old\n")
    elif how == "dir":
        target.mkdir()
    elif how == "under-file":
        target.write_text("a file\n")
        target = target / "child"
    return [flag, str(target)]


def flag(name: str, values: st.SearchStrategy[str] = NUMBERS) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


def check_run(argv: list[str], tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in out + err, (argv, err)
    if code == 2:
        assert 1 <= err.count("\n") <= 3, (argv, err)
    for p in tmp.rglob("*"):
        assert not p.name.endswith(".tmp"), (argv, p)  # an atomic write left behind
        if not p.relative_to(tmp).parts[0].startswith("out"):
            continue  # an input file
        if p.is_file() and p.suffix == ".xml":
            ET.parse(p)
        elif p.is_file() and p.suffix in (".sarif", ".json") and p.read_text() != "old\n":
            json.loads(p.read_text())
        elif p.is_file() and p.suffix == ".jsonl" and p.read_text() != "old\n":
            for line in p.read_text().splitlines():
                json.loads(line)


@SETTINGS
@given(data=st.data())
def test_check(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    tmp = Path(tempfile.mkdtemp(dir=tmp_path))  # fresh per example (Hypothesis reruns)
    target = data.draw(
        st.one_of(
            st.sampled_from(NAMES).map(lambda n: [n] if n else []),
            input_file(tmp, "toml").map(lambda p: [p]),
            st.just(["--all"]),
        )
    )
    argv = ["check", *target, "--depth", data.draw(st.sampled_from(["1", "2", "3", "0", "-4"]))]
    argv += ["--no-prove"] if "--all" in target or data.draw(st.booleans()) else []
    for f in ("--requests", "--pages", "--workers"):
        argv += data.draw(flag(f, st.sampled_from(["0", "1", "2", "-3", "x", "10**9"])))
    for f in ("--out", "--junit", "--sarif"):
        argv += data.draw(output_path(tmp, f))
    argv += data.draw(st.sampled_from([[], ["--json"]]))
    argv += data.draw(st.sampled_from([[], ["--variants-dir", str(tmp)], ["--bogus"]]))
    check_run(argv, tmp, capsys)


@SETTINGS
@given(data=st.data())
def test_prove_and_explore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    tmp = Path(tempfile.mkdtemp(dir=tmp_path))  # fresh per example (Hypothesis reruns)
    name = data.draw(st.sampled_from(["sglang-0.5.22-pd", "nosuch", "--all"]))
    if data.draw(st.booleans()):
        argv = ["prove", name, *data.draw(flag("--timeout"))]
        argv += data.draw(st.sampled_from([[], ["--variants-dir", str(tmp / "none")]]))
    else:
        argv = [
            "explore",
            name,
            "--requests",
            "1",
            "--pages",
            data.draw(st.sampled_from(["1", "2"])),
        ]
        argv += data.draw(flag("--max-seconds")) + data.draw(flag("--max-states"))
        for f in ("--dot", "--graphml"):
            argv += data.draw(output_path(tmp, f))
    check_run(argv + data.draw(st.sampled_from([[], ["--json"]])), tmp, capsys)


@SETTINGS
@given(data=st.data())
def test_trace_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    tmp = Path(tempfile.mkdtemp(dir=tmp_path))  # fresh per example (Hypothesis reruns)
    cmd = data.draw(st.sampled_from(["replay", "replay-itf", "validate", "variants"]))
    if cmd == "variants":
        argv = ["variants", *data.draw(st.sampled_from([[], ["--json"]]))]
        argv += data.draw(st.sampled_from([[], ["--variants-dir", str(tmp)]]))
    elif cmd == "validate":
        argv = ["validate", data.draw(input_file(tmp, "log.jsonl"))]
        argv += data.draw(
            st.sampled_from([[], ["--variant", "sglang-0.5.19-pd"], ["--variant", "x"]])
        )
    else:
        kind = "jsonl" if cmd == "replay" else "itf.json"
        argv = ["replay", data.draw(input_file(tmp, kind)), "--max-new-tokens"]
        argv += [data.draw(st.sampled_from(["1", "4", "0", "-2", "10**9"]))]
        argv += data.draw(
            st.sampled_from([[], ["--variant", "sglang-0.5.22-pd"], ["--variant", ""]])
        )
    check_run(argv, tmp, capsys)


@SETTINGS
@given(data=st.data())
def test_engine_and_network_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    tmp = Path(tempfile.mkdtemp(dir=tmp_path))  # fresh per example (Hypothesis reruns)
    cmd = data.draw(st.sampled_from(["fuzz", "serve", "probe", "audit", "demo"]))
    if cmd == "fuzz":
        argv = ["fuzz", data.draw(st.sampled_from([*NAMES[:2], "nosuch"])), "--traces"]
        argv += [data.draw(st.sampled_from(["1", "2", "0", "-1", "x"]))]
        argv += data.draw(flag("--seed")) + data.draw(output_path(tmp, "--out"))
        argv += data.draw(st.sampled_from([[], ["--json"]]))
    elif cmd == "serve":
        # Always one bad value: a valid serve would serve forever.
        bad = data.draw(
            st.sampled_from(
                [
                    ["--port", "0"],
                    ["--port", "70000"],
                    ["--transfer-us-per-page", "-5"],
                    ["--prefill-us-per-token", "nan"],
                    ["--variant", "nosuch"],
                    ["--host", "no.such.host.invalid"],
                ]
            )
        )
        argv = ["serve", *bad]
    elif cmd == "probe":
        url = data.draw(st.sampled_from([f"http://127.0.0.1:{closed_port()}", "ftp://x", "x"]))
        argv = ["probe", url, *data.draw(flag("--timeout")), *data.draw(flag("--max-requests"))]
        argv += data.draw(flag("--context"))
    elif cmd == "demo":
        argv = ["demo", data.draw(st.sampled_from(["incident", "nope"]))]
        argv += ["--variant", data.draw(st.sampled_from([*NAMES[:2], "nosuch"]))]
        argv += data.draw(st.sampled_from([[], ["--device", "tpu"], ["--device", "cuda"]]))
        argv += data.draw(flag("--seed"))
    else:
        argv = ["audit", data.draw(input_file(tmp, data.draw(st.sampled_from(["toml", "jsonl"]))))]
        argv += data.draw(flag("--context"))
    check_run(argv, tmp, capsys)
