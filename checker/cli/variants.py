"""List the variants with their source and expected verdicts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--variants-dir", type=Path, help="folder of variant TOMLs (default: kvproof's)"
    )
    parser.add_argument("--protocol", help="user protocol factory 'module:attr' (its variants)")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from kvproof.checker.cli.consoles import console_for
    from kvproof.checker.cli.paths import check_input_dir
    from kvproof.checker.report.tables import print_table
    from kvproof.checker.verify.protocols import resolve_variants

    check_input_dir(args.variants_dir, "--variants-dir")
    variants = resolve_variants([], True, args.variants_dir, args.protocol)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": v.name,
                        "engine": v.engine,
                        "version": v.version,
                        "buggy": v.buggy,
                        "summary": v.summary,
                        "sources": list(v.sources),
                        "expect": dict(v.expect),
                        # issue #29: the liveness properties and their expected verdicts
                        "liveness": dict(v.expect_liveness),
                        "counterpart": v.counterpart,
                        "assume": dict(v.assume),
                        "role": v.role,
                    }
                    for v in variants
                ],
                indent=2,
            )
        )
        return 0
    table = Table(title="kvproof variants")
    for col in ("variant", "kind", "expected violations", "assumes", "source"):
        table.add_column(col)
    for v in variants:
        bad = [k for k, x in v.expect.items() if x == "violated"]
        table.add_row(
            v.name,
            ("[red]buggy[/]" if v.buggy else "[green]fixed[/]") + ROLE_MARKS.get(v.role, ""),
            ", ".join(bad) or "none",
            ", ".join(v.assume) or "-",
            v.sources[0],
        )
    print_table(console_for(), table)
    return 0


# The marks of a variant's ``role`` (its file says which; ``spec/variant.py`` checks it).
ROLE_MARKS = {"incident": " (the incident)", "recommended": " (recommended)"}
