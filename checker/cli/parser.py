"""The ``kvproof`` parser: one subcommand per module of ``COMMANDS``, usage errors as values.

Each subcommand module exposes ``configure(parser)`` (arguments only, cheap imports) and
``run(args) -> int``; its docstring is its help. The operator's commands live in
``ops/cli/``, the checker's here.

``--help`` is in plain words: the commands' docstrings are written for the source
(``code``, **bold**) and shown without the marks; an option that takes a value says its
default: "(default: X)" is added where its help does not already say, and a trailing "(X)"
becomes "(default: X)".
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re

from kvproof import __version__
from kvproof.checker.cli import exits
from kvproof.spec.errors import KvproofInputError

# Command -> the room of its module (``kvproof.<room>.cli.<command>``). Order is the order
# of ``kvproof --help``. A command whose module is absent is skipped, so a partial checkout
# still runs the commands it has.
COMMANDS: dict[str, str] = {
    "advise": "ops",
    "variants": "checker",
    "check": "checker",
    "prove": "checker",
    "explore": "checker",
    "replay": "checker",
    "validate": "checker",
    "fuzz": "checker",
    "conform": "checker",
    "audit": "ops",
    "demo": "checker",
    "serve": "ops",
    "probe": "ops",
    "report": "checker",
}


def plain(text: str | None) -> str | None:
    """``text`` without its source marks (``code``, **bold**), as ``--help`` shows it."""
    for mark in ("``", r"\*\*"):
        text = text and re.sub(f"{mark}(.+?){mark}", r"\1", text, flags=re.S)
    return text


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = plain(action.help) or ""
        if (
            not action.option_strings
            or action.nargs == 0
            or action.help == argparse.SUPPRESS
            or action.required
            or "default" in text.lower()
        ):
            return text
        value = action.default
        shown = "none" if value in (None, [], ()) else str(value)
        shown = shown.replace("%", "%%")  # argparse %-formats help strings
        tail = f"({shown})"
        if text.endswith(tail):
            text = text[: -len(tail)].rstrip()
        return f"{text} (default: {shown})" if text else f"default: {shown}"


# ``kvproof --help`` opens with where to start (issue 41: 13 commands and no first step).
# A command whose module this checkout lacks is left out (``COMMANDS``).
START_HERE = (
    ("advise", "kvproof advise sglang==0.5.20", "is my release safe, and what do I change?"),
    ("demo", "kvproof demo incident", "the 2026 leak, reproduced on the reference engine"),
    ("check", "kvproof check sglang==0.5.20", "the model's verdicts, shortest counterexamples"),
    ("conform", "kvproof conform sglang==0.5.22", "the release's own code against the model"),
    ("variants", "kvproof variants", "the engine versions kvproof models, by release"),
)


def start_here(commands: set[str]) -> str:
    """The "start here" lines for the commands this checkout has."""
    rows = [(cmd, what) for name, cmd, what in START_HERE if name in commands]
    width = max(len(cmd) for cmd, _ in rows)
    lines = [f"  {cmd:<{width}}  {what}" for cmd, what in rows]
    return (
        "start here:\n"
        + "\n".join(lines)
        + "\n(README.md: a five-minute tour; docs/cli.md: every command)"
    )


class _Parser(argparse.ArgumentParser):
    """Usage errors become one line and exit 2, through ``main`` (so a library call returns)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # ``main`` prints "kvproof: error:" before it, as before every error (scripts grep it).
        raise KvproofInputError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    present = {
        name: f"kvproof.{room}.cli.{name}"
        for name, room in COMMANDS.items()
        if importlib.util.find_spec(f"kvproof.{room}.cli.{name}")
    }
    parser = _Parser(
        prog="kvproof",
        description="KV-cache isolation, provable and testable.\n\n" + start_here(set(present)),
        epilog=exits.CONTRACT,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kvproof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, modname in present.items():
        module = importlib.import_module(modname)
        doc = (module.__doc__ or "").strip().splitlines()
        p = sub.add_parser(
            name,
            help=plain(doc[0]) if doc else None,
            description=plain(module.__doc__ or None),
            epilog=exits.CONTRACT,
            formatter_class=HelpFormatter,
        )
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser
