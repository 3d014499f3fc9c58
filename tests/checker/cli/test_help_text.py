"""--help in plain words: no source markup, every option that takes a value shows its
default, and serve names the variant it serves by default."""

from __future__ import annotations

import argparse

import pytest

from kvproof.checker.cli import build_parser, main


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(subparsers()))
def test_help_has_no_markup_and_every_default(name: str) -> None:
    parser = subparsers()[name]
    text = parser.format_help()
    assert "``" not in text and "**" not in text
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.nargs == 0 or action.required:
            continue
        shown = formatter._get_help_string(action) or ""
        assert "default" in shown.lower(), (name, action.option_strings)


def test_fuzz_and_demo_seed_and_model_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["fuzz", "--help"], ["demo", "--help"]):
        assert main(argv) == 0
        flat = " ".join(capsys.readouterr().out.split())
        assert "--seed SEED seed of the" in flat and "(default: 0)" in flat
    assert main(["demo", "--help"]) == 0
    assert "(default: echo)" in " ".join(capsys.readouterr().out.split())


def test_serve_says_which_variant_it_serves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "default: sglang-0.5.22-pd, the recommended fixed release" in flat


def test_top_level_help_says_where_to_start(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: ``kvproof --help`` names the first commands to run, each a real one."""
    from kvproof.checker.cli.parser import COMMANDS, START_HERE

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    start = out.index("start here:")
    assert start < out.index("positional arguments")
    assert "kvproof demo incident" in out and "kvproof check sglang==0.5.20" in out
    assert all(name in COMMANDS or name == "advise" for name, _, _ in START_HERE)
