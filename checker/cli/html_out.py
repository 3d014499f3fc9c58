"""``--html`` output paths, checked before any work starts (bad input: exit 2, one line).

A stop-gap until the shared output-path validator of the CLI lands (``cli/paths.py``);
then these two calls should become that module's.
"""

from __future__ import annotations

import os
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def _writable_dir(d: Path) -> bool:
    return d.is_dir() and os.access(d, os.W_OK | os.X_OK)


def check_file(path: str | Path, flag: str = "--html") -> Path:
    """An HTML file we can create or overwrite."""
    p = Path(path)
    if p.is_dir():
        raise KvproofInputError("is a folder; name an .html file", f"{flag} {path}")
    if p.exists() and not os.access(p, os.W_OK):
        raise KvproofInputError("cannot write this file", f"{flag} {path}")
    parent = p.resolve().parent
    if not parent.is_dir():
        raise KvproofInputError("no such folder", f"{flag} {path}")
    if not _writable_dir(parent):
        raise KvproofInputError("cannot write into this folder", f"{flag} {path}")
    return p


def check_dir(path: str | Path, flag: str = "--html") -> Path:
    """A folder we can create (with its parents) or write into."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise KvproofInputError("exists and is not a folder", f"{flag} {path}")
    probe = p.resolve()
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not _writable_dir(probe):
        raise KvproofInputError("cannot write into this folder", f"{flag} {path}")
    return p
