"""User files in and out: read with one error, write so that no file is ever half-written.

Every loader (variants, traces, event logs) reads through ``read_text``, so a missing file,
a folder, a permission error or bytes that are not UTF-8 all become one
``KvproofInputError`` naming the file. Every writer of a result (traces, JUnit, SARIF, graph
files) goes through ``write_text_atomic``: the text lands in a temporary file beside the
target and is renamed over it, so an interrupted run leaves the old file or the new one.
The file gets the mode a plain ``open`` would give it (0644 under umask 022): ``mkstemp``
makes it 0600, which another CI step or user could not read.
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


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename (never half-written).

    The parent folder must exist: a file output's folder is checked before the work starts
    (``checker/cli/paths.py``), and a folder output (``--out DIR``) is made by its writer."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
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


def unused_stem(folders_and_suffixes: list[tuple[Path, str]], stem: str) -> str:
    """``stem``, or ``stem.run2``, ``stem.run3``, ...: the first for which no
    ``folder / (stem + suffix)`` exists, so a second run keeps the first run's files (a
    second ``kvproof fuzz`` once overwrote the first finding, issue 41)."""
    n, name = 1, stem
    while any((folder / f"{name}{suffix}").exists() for folder, suffix in folders_and_suffixes):
        n += 1
        name = f"{stem}.run{n}"
    return name
