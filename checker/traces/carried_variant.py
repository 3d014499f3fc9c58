"""The variant a trace was checked against, carried in the trace when the catalog lacks it.

A trace names its variant, and ``report``/``replay`` look the name up in the catalog. A
variant written for one question (``conform`` against a copy of a catalog file with one
switch changed, a user's ``.toml``) is not there, so its trace carries the variant itself:
the file's TOML text under ``meta.variant_toml`` (JSON Lines header; ``#meta.variant_toml``
in ITF) and the switches it was checked with under ``meta.variant_switches`` (they win
over the text's, for a variant changed in memory after it was read). A catalog variant's
trace carries nothing: its name says it all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import VARIANTS_DIR, Switches, Variant, load_variant, parse_variant
from kvproof.spec.variant_file import _check_table

TOML_KEY = "variant_toml"
SWITCHES_KEY = "variant_switches"
CARRIED = (TOML_KEY, SWITCHES_KEY)


def carried(variant: Variant) -> dict[str, Any]:
    """The trace-meta entries that let a reader rebuild ``variant``: none for the catalog's
    own (same file, same switches), else its TOML text and switches."""
    own = VARIANTS_DIR / f"{variant.name}.toml"
    same_file = own.is_file() and own.resolve() == Path(variant.path).resolve()
    if same_file and load_variant(variant.name).switches == variant.switches:
        return {}
    return {
        TOML_KEY: Path(variant.path).read_text(encoding="utf-8"),
        SWITCHES_KEY: dataclasses.asdict(variant.switches),
    }


def trace_variant(name: str, meta: Mapping[str, Any], where: str) -> Variant:
    """The variant a trace with ``name`` and ``meta`` was checked against: the one it
    carries, else the catalog's (bad input, naming ``where``, when it is neither)."""
    text = meta.get(TOML_KEY)
    if text is None:
        return load_variant(name)
    if not isinstance(text, str):
        raise KvproofInputError(f"'{TOML_KEY}' must be the variant's TOML text", where)
    variant = parse_variant(text, Path(f"{where}: meta.{TOML_KEY}"))
    switches = meta.get(SWITCHES_KEY)
    if switches is None:
        return variant
    if not isinstance(switches, dict):
        raise KvproofInputError(f"'{SWITCHES_KEY}' must be an object", where)
    checked = _check_table(switches, Switches, Path(where), f"meta.{SWITCHES_KEY}")
    return dataclasses.replace(variant, switches=Switches(**checked))
