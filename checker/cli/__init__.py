"""The ``kvproof`` command line: a thin shell over the library.

Each subcommand lives in ``kvproof.checker.cli.<name>`` and exposes
``configure(parser)`` (arguments only, cheap imports) and ``run(args) -> int``.
Heavy imports (torch, z3) happen inside ``run`` so that ``kvproof check`` never
loads torch and ``kvproof --help`` starts instantly.

Exit codes everywhere: 0 holds / clean, 1 violation / leak / finding, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from kvproof import __version__
from kvproof.spec.errors import KvproofInputError

# Order is the order of ``kvproof --help``. A command whose module is absent is skipped,
# so a partial checkout still runs the commands it has.
COMMANDS: tuple[str, ...] = (
    "variants",
    "check",
    "prove",
    "explore",
    "replay",
    "validate",
    "fuzz",
    "audit",
    "demo",
    "serve",
    "probe",
    "report",
)


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"kvproof: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvproof", description="KV-cache isolation, provable and testable.")
    parser.add_argument("--version", action="version", version=f"kvproof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        modname = f"kvproof.checker.cli.{name}"
        if importlib.util.find_spec(modname) is None:
            continue
        module = importlib.import_module(modname)
        doc = (module.__doc__ or "").strip().splitlines()
        p = sub.add_parser(name, help=doc[0] if doc else None, description=(module.__doc__ or None))
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except KvproofInputError as exc:
        print(f"kvproof: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kvproof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `kvproof ... --json | head`: the reader left; say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
