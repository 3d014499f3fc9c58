"""Small truths: the CLI reference's synopsis and ``check`` example (``docs/cli.md``, moved
out of the README in issue 41) match the real CLI, human
output starts with content, ``check --all`` never cuts a variant name, and no variant
cites a file that is not in the repository."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from kvproof.checker.cli import build_parser
from kvproof.spec.variant import list_variants

ROOT = Path(__file__).resolve().parents[3]
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> str:
    start = CLI_DOC.index(marker)
    body = CLI_DOC.index("```\n", start) + 4
    return CLI_DOC[body : CLI_DOC.index("```", body)]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_synopsis_lists_every_command_and_flag() -> None:
    synopsis = _block_after("**Exit codes**")
    for name, sp in _subparsers().items():
        assert f"kvproof {name}" in synopsis, name
        for action in sp._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt != "--help":
                    assert re.search(rf"{re.escape(opt)}\b", synopsis), f"{name} {opt}"


def test_cli_doc_check_example_is_the_real_output() -> None:
    # From the shell, as a user runs it (Z3's choice among equally short traces depends on
    # the solver's history in the process; a fresh process is what the doc shows).
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-m", "kvproof", "check", "sglang-0.5.19-pd"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    real = [ln.rstrip() for ln in done.stdout.splitlines()]
    shown = _block_after("## `kvproof check`").splitlines()[1:]  # after the $ line

    def norm(line: str) -> str:
        # Z3's pick among equally short traces is not stable across processes (seen: the
        # same trace on p0 or on p1); the steps, changes and verdicts are.
        return re.sub(r"\bp\d\b", "p#", re.sub(r"\d+\.\d\d s", "S s", line.rstrip()))

    real_n = [norm(x) for x in real]
    i = 0
    for line in shown:
        if line == "...":
            continue
        assert norm(line) in real_n[i:], line  # in order
        i = real_n.index(norm(line), i) + 1
    assert real[0].strip() != "" and real[0].startswith("sglang-0.5.19-pd")


def test_check_all_table_keeps_every_name() -> None:
    import dataclasses

    from kvproof.checker.render.check_text import render_all
    from kvproof.checker.verify.driver import prepare, run_job
    from kvproof.checker.verify.plan import CheckOptions, Phase

    variants = [v for v in list_variants() if len(v.name) >= 20][:2]
    options = CheckOptions(requests=1, pages=1, depth=1)
    jobs = [prepare(v, options) for v in variants]
    bmc_only = [(dataclasses.replace(j, phases=(Phase("bmc", 1),)), p) for j, p in jobs]
    checks = [run_job(j, p) for j, p in bmc_only]
    console = Console(width=60, record=True, color_system=None)
    render_all(console, checks)
    text = console.export_text()
    for v in variants:
        assert v.name in text, v.name


def test_variants_cite_no_missing_file() -> None:
    for v in list_variants():
        for src in v.sources:
            if src.startswith(("http://", "https://")):
                continue
            path = src.split(":", 1)[0].strip()
            assert (ROOT / path).exists(), f"{v.name} cites {src}"


@pytest.mark.slow
def test_corpus_regenerates_as_tracked_and_writes_nothing(tmp_path: Path) -> None:
    from kvproof.checker.traces.corpus import TRACES_DIR

    # A fresh process, as a user runs it: Z3's pick among equally short traces differs in a
    # process that loaded other libraries first (seen: with torch and pytest imported).
    cmd = [sys.executable, "-m", "kvproof.checker.traces.corpus"]
    # traces/lasso/ holds liveness lassos, which the corpus does not generate.
    before = {p.name: p.read_bytes() for p in TRACES_DIR.iterdir() if p.is_file()}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout  # the same files as tracked
    after = {p.name: p.read_bytes() for p in TRACES_DIR.iterdir() if p.is_file()}
    assert after == before  # none written
    done = subprocess.run([*cmd, "--out", str(tmp_path)], timeout=600, check=False)
    assert done.returncode == 0 and any(tmp_path.glob("*.jsonl"))
