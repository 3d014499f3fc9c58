"""The ``kvproof`` command line: a thin shell over the library.

Each subcommand is a module (``parser.py``). Heavy imports (torch, z3) happen inside its
``run`` so that ``kvproof check`` never loads torch and ``kvproof --help`` starts instantly.

The exit-code contract lives in ``exits.py``; ``main`` is the one place that turns an
error into an exit code and one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from collections.abc import Sequence

from kvproof.checker.cli import exits
from kvproof.checker.cli.parser import COMMANDS, build_parser
from kvproof.spec.errors import KvproofInputError

__all__ = ["COMMANDS", "build_parser", "entry", "main"]

_ENVIRONMENT = (errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EPERM, errno.EDQUOT)


def _say(message: str) -> None:
    # One line, always: a message with newlines (a file's content, an OS error) is joined.
    print("kvproof: error: " + " ".join(str(message).split()), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (see ``exits.CONTRACT``), never raises."""
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "_run", None):
            raise KvproofInputError("name a COMMAND (kvproof --help lists them)")
        return int(args._run(args))
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) if isinstance(exc.code, int) else exits.BAD_INPUT
    except KvproofInputError as exc:  # argparse's usage errors too (``parser._Parser``)
        _say(str(exc))
        return exits.BAD_INPUT
    except KeyboardInterrupt:
        print("kvproof: interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except BrokenPipeError:
        # `kvproof ... --json | head`: the reader left; say nothing more. The verdict was
        # not delivered, so do not claim one: the shell's code for SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # the last guard: one line, never a traceback
        if isinstance(exc, OSError) and exc.errno in _ENVIRONMENT:
            # The disk filled or a path became unwritable mid-run: the user's environment.
            _say(f"{exc.filename or 'output'}: {exc.strerror}")
            return exits.BAD_INPUT
        if os.environ.get("KVPROOF_DEBUG"):
            traceback.print_exception(exc)
        else:
            tb = traceback.extract_tb(exc.__traceback__)
            at = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
            _say(
                f"internal error (a bug in kvproof, please report it): "
                f"{type(exc).__name__}: {exc}{at}; KVPROOF_DEBUG=1 shows the traceback"
            )
        return exits.INTERNAL


def entry() -> None:
    """The console script: run ``main``, flush, and leave without running finalizers.

    Z3's ``Context.__del__`` at interpreter teardown can spin for minutes in
    ``Z3_del_context`` (``ast_manager::~ast_manager``) when the GC finalizes the context
    before ASTs still alive in caches (seen on ``check sglang-0.5.22-pd --depth 12``).
    The work is done and the output flushed; nothing is left for finalizers to do. Only the
    process entry point does this: ``main`` called as a library returns normally.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
