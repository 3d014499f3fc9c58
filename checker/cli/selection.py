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
    from kvproof.spec.by_release import say_release
    from kvproof.spec.invariants import INVARIANTS
    from kvproof.spec.liveness import LIVENESS
    from kvproof.spec.names import require_assumed, require_known
    from kvproof.spec.variant import VARIANTS_DIR, load_variant

    variants = list(variants)
    loaded = [load_variant(v, variants_dir or VARIANTS_DIR) for v in variants]
    say_release(variants, variants_dir or VARIANTS_DIR)
    names = [*INVARIANTS, *LIVENESS]  # --invariant takes a liveness property too (#29)
    for name in invariants:
        require_known(name, sorted(names), "invariant", "--invariant")
    for variant in loaded:
        require_assumed(variant.name, tuple(variant.assume), without)
