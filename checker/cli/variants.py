"""List the variants with their source and expected verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path

from kvproof.checker.cli.consoles import console_for
from kvproof.checker.cli.paths import check_input_dir


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--variants-dir", type=Path, help="folder of variant TOMLs (default: kvproof's)"
    )
    parser.add_argument("--protocol", help="user protocol factory 'module:attr' (its variants)")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.variants import render
    from kvproof.checker.verify.protocols import resolve_variants

    check_input_dir(args.variants_dir, "--variants-dir")
    variants = resolve_variants([], True, args.variants_dir, args.protocol)
    render(console_for(), variants, as_json=args.json)
    return 0
