"""The ``kvproof`` parser: one subcommand per module of ``COMMANDS``, usage errors as values.

Each subcommand module exposes ``configure(parser)`` (arguments only, cheap imports) and
``run(args) -> int``; its docstring is its help. The operator's commands live in
``ops/cli/``, the checker's here.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util

from kvproof import __version__
from kvproof.checker.cli import exits
from kvproof.checker.cli.helptext import HelpFormatter, plain, start_here

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


class UsageError(Exception):
    """argparse's usage error, caught by ``main`` instead of exiting the process."""


class _Parser(argparse.ArgumentParser):
    """Usage errors become one line and exit 2, through ``main`` (so a library call returns)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # Every error line starts "kvproof: error:", usage errors too (scripts grep for it).
        raise UsageError(f"kvproof: error: {message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    fmt = HelpFormatter
    present = {
        name: f"kvproof.{room}.cli.{name}"
        for name, room in COMMANDS.items()
        if importlib.util.find_spec(f"kvproof.{room}.cli.{name}")
    }
    parser = _Parser(
        prog="kvproof",
        description="KV-cache isolation, provable and testable.\n\n" + start_here(set(present)),
        epilog=exits.CONTRACT,
        formatter_class=fmt,
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
            formatter_class=fmt,
        )
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser
