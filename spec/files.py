"""User files in and out: read with one error, write so that no file is ever half-written.

Every loader (variants, traces, event logs) reads through ``read_text``, so a missing file,
a folder, a permission error or bytes that are not UTF-8 all become one
``KvproofInputError`` naming the file. Every writer of a result (traces, JUnit, SARIF, graph
files) goes through ``write_text_atomic``: the text lands in a temporary file beside the
target and is renamed over it, so an interrupted run leaves the old file or the new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def read_text(path: Path | str, what: str = "file") -> str:
    """The UTF-8 text of ``path``; bad input raises ``KvproofInputError`` naming it."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise KvproofInputError(f"cannot read {what}: is a directory", str(p)) from None
    except OSError as exc:
        raise KvproofInputError(f"cannot read {what}: {exc.strerror or exc}", str(p)) from None
    except UnicodeDecodeError as exc:
        raise KvproofInputError(
            f"cannot read {what}: not UTF-8 text (byte {exc.start})", str(p)
        ) from None


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename (never half-written)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path | str, text: str) -> None:
    """``write_bytes_atomic`` for UTF-8 text."""
    write_bytes_atomic(path, text.encode("utf-8"))
