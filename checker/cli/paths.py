"""What a command was given, checked before any work starts: its paths and its names.

A run of ``check --all`` or ``fuzz`` can take minutes; an ``--out``, ``--junit``,
``--sarif``, ``--dot`` or ``--graphml`` that cannot be written must fail at once (exit 2,
one line), not after the work, losing its findings. A folder output (``--out DIR``) is made
here if missing; a file output's folder must exist (a typo in it must not leave a new tree
of folders behind), and nothing is created for it. Writing itself is atomic
(``kvproof.spec.files.write_text_atomic``).

The variants a command was asked for: VARIANT... or --all, never neither or both; and the
``--invariant`` names typed, checked before Z3 or torch is loaded (``check_names``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def _check_creatable(path: Path, flag: str, folder: bool = False) -> None:
    """``path`` does not exist: its nearest existing ancestor must be a writable folder, and
    the folders up to it must really be creatable. Permission bits alone do not say so (root
    passes ``os.access`` on ``/proc``, where nothing can be created), so the folders are made
    now, before the work, and for a file a probe file is created and removed."""
    where = f"{flag} {path}"
    anc = path.absolute()  # the nearest existing ancestor
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise KvproofInputError(f"{anc} is not a folder", where)
    if not os.access(anc, os.W_OK | os.X_OK):
        raise KvproofInputError(f"cannot write in {anc}", where)
    target = path if folder else path.absolute().parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        if not folder:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=target)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise KvproofInputError(f"cannot create it: {exc.strerror or exc}", where) from None


def check_output_file(path: Path | str | None, flag: str) -> Path | None:
    """``path`` can be written as a file (an existing file is replaced); None passes."""
    if path is None:
        return None
    p = Path(path)
    if str(path) == "" or str(path).endswith(os.sep):
        raise KvproofInputError("expected a file name", f"{flag} {path}")
    if p.is_dir():
        raise KvproofInputError("is a folder, expected a file", f"{flag} {path}")
    if p.exists():
        if not os.access(p, os.W_OK) or not os.access(p.absolute().parent, os.W_OK | os.X_OK):
            raise KvproofInputError("not writable", f"{flag} {path}")
        return p
    parent = p.absolute().parent
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        raise KvproofInputError(f"its folder {parent} {why}", f"{flag} {path}")
    _check_creatable(p, flag)
    return p


def check_output_dir(path: Path | str | None, flag: str) -> Path | None:
    """``path`` is, or can be made, a writable folder; None passes."""
    if path is None:
        return None
    p = Path(path)
    if str(path) == "":
        raise KvproofInputError("expected a folder name", flag)
    if p.exists():
        if not p.is_dir():
            raise KvproofInputError("exists and is not a folder", f"{flag} {path}")
        if not os.access(p, os.W_OK | os.X_OK):
            raise KvproofInputError("folder not writable", f"{flag} {path}")
        return p
    _check_creatable(p, flag, folder=True)
    return p


def check_input_dir(path: Path | str | None, flag: str, pattern: str = "*.toml") -> Path | None:
    """``path`` is an existing folder holding at least one ``pattern``; None passes."""
    if path is None:
        return None
    p = Path(path)
    if not p.exists():
        raise KvproofInputError("no such folder", f"{flag} {path}")
    if not p.is_dir():
        raise KvproofInputError("is not a folder", f"{flag} {path}")
    if not any(p.glob(pattern)):
        raise KvproofInputError(f"no {pattern} files in this folder", f"{flag} {path}")
    return p


def check_names(
    variants: Sequence[str],
    variants_dir: Path | None,
    protocol: str | None,
    invariants: Iterable[str] = (),
    every: bool = False,
) -> None:
    """VARIANTs or ``every`` (``--all``), not neither or both (``explore``: its one VARIANT).
    A typo in ``--invariant`` is exit 2 with the nearest name at once (``spec/names.py``),
    not after seconds of imports; a release typed as a variant (``sglang==0.5.20``) says which
    variant it is. kvproof's own vocabulary only: a ``--protocol`` brings its own, checked
    when its module is loaded. A VARIANT's file is only looked for here; the files are read
    once, by the library call, which checks each ``--without`` name before any search starts."""
    if not every and not variants:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if variants and every:
        raise KvproofInputError("name VARIANTs or --all, not both", "--all")
    check_input_dir(variants_dir, "--variants-dir")
    if protocol:
        return
    from kvproof.spec.by_release import no_such_variant, parse_release, say_release
    from kvproof.spec.invariants import INVARIANTS
    from kvproof.spec.liveness import LIVENESS
    from kvproof.spec.names import require_known
    from kvproof.spec.variant import VARIANTS_DIR

    folder = variants_dir or VARIANTS_DIR
    for name in variants:
        # Only whether the file exists (the library reads it, once): a mistyped name is
        # exit 2 with the nearest names before Z3 or torch loads (tests/spec/test_names.py).
        plain = parse_release(name) is None and not name.endswith(".toml")
        if plain and not (Path(folder) / f"{name}.toml").is_file():
            raise no_such_variant(name, Path(folder), catalog=variants_dir is None)
    say_release(list(variants), folder)
    names = [*INVARIANTS, *LIVENESS]  # --invariant takes a liveness property too (#29)
    for name in invariants:
        require_known(name, sorted(names), "invariant", "--invariant")
