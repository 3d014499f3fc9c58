"""Which variants a command was asked for: VARIANT... or --all, never neither or both; and
the ``--invariant`` names typed, checked before Z3 or torch is loaded."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def check_names(
    variants: Sequence[str],
    variants_dir: Path | None,
    protocol: str | None,
    invariants: Iterable[str] = (),
    every: bool | None = None,
) -> None:
    """VARIANTs or ``every`` (``--all``) when a command takes either, not neither or both.
    A typo in ``--invariant`` is exit 2 with the nearest name at once (``spec/names.py``),
    not after seconds of imports; a release typed as a variant (``sglang==0.5.20``) says which
    variant it is. kvproof's own vocabulary only: a ``--protocol`` brings its own, checked
    when its module is loaded. A VARIANT's file is only looked for here; the files are read
    once, by the library call, which checks each ``--without`` name before any search starts."""
    from kvproof.checker.cli.paths import check_input_dir

    if every is False and not variants:
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
