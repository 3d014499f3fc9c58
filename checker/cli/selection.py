"""Which variants a command was asked for: VARIANT... or --all, never neither or both."""

from __future__ import annotations

import argparse

from kvproof.spec.errors import KvproofInputError


def check_selection(args: argparse.Namespace) -> None:
    if not args.variants and not args.all:
        raise KvproofInputError("name at least one VARIANT, or --all")
    if args.variants and args.all:
        raise KvproofInputError("name VARIANTs or --all, not both", "--all")
