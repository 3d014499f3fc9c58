"""Which variants a command was asked for: VARIANT... or --all, never neither or both; and
the names typed (variants, --invariant, --without) checked before Z3 or torch is loaded."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def check_selection(args: argparse.Namespace) -> None:
    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if args.variants and args.all:
        raise KvproofInputError("name VARIANTs or --all, not both", "--all")


def check_names(
    variants: Iterable[str],
    variants_dir: Path | None,
    protocol: str | None,
    invariants: Iterable[str] = (),
    without: Iterable[str] = (),
) -> None:
    """A typo is exit 2 with the nearest name at once (``spec/names.py``), not after seconds
    of imports. kvproof's own vocabulary only: a ``--protocol`` brings its own, checked when
    its module is loaded."""
    from kvproof.checker.cli.paths import check_input_dir

    check_input_dir(variants_dir, "--variants-dir")
    if protocol:
        return
    from kvproof.spec.invariants import INVARIANTS
    from kvproof.spec.liveness import LIVENESS
    from kvproof.spec.names import did_you_mean
    from kvproof.spec.variant import VARIANTS_DIR, load_variant

    loaded = [load_variant(v, variants_dir or VARIANTS_DIR) for v in variants]
    names = [*INVARIANTS, *LIVENESS]  # --invariant takes a liveness property too (#29)
    for name in invariants:
        if name not in names:
            known = ", ".join(sorted(names))
            raise KvproofInputError(
                f"unknown invariant {name!r}{did_you_mean(name, names)} (known: {known})",
                "--invariant",
            )
    for variant in loaded:
        for name in without:
            if name not in variant.assume:
                listed = ", ".join(variant.assume) or "none"
                raise KvproofInputError(
                    f"{variant.name} does not assume {name!r}"
                    f"{did_you_mean(name, variant.assume)} (it assumes: {listed})",
                    "--without",
                )
