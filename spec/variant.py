"""Named variants: look one up by name, by ``.toml`` path or by release.

``spec/variant_file.py`` reads and checks the files (``Variant``, ``load_variant_file``,
``list_variants``); this module adds the lookup a user types, where a release
(``sglang==0.5.20``) resolves through the variants' ``[upstream]`` tables
(``spec/by_release.py``) and an unknown name gets a did-you-mean ranked by release.
"""

from __future__ import annotations

from pathlib import Path

from kvproof.spec import by_release
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.switches import CHOICES as CHOICES
from kvproof.spec.switches import Switches as Switches
from kvproof.spec.variant_file import DEMO_OUTCOMES as DEMO_OUTCOMES
from kvproof.spec.variant_file import ROLES as ROLES
from kvproof.spec.variant_file import VARIANTS_DIR as VARIANTS_DIR
from kvproof.spec.variant_file import AssumptionNames as AssumptionNames
from kvproof.spec.variant_file import InvariantNames as InvariantNames
from kvproof.spec.variant_file import Sizes as Sizes
from kvproof.spec.variant_file import Variant as Variant
from kvproof.spec.variant_file import _folder
from kvproof.spec.variant_file import list_variants as list_variants
from kvproof.spec.variant_file import load_variant_file as load_variant_file
from kvproof.spec.variant_file import parse_variant as parse_variant


def load_variant(
    name_or_path: str,
    folder: Path = VARIANTS_DIR,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    """A variant by name (from ``folder``), by the path of a ``.toml`` file, or by a release
    (``sglang==0.5.20``: the variant whose ``[upstream]`` lists it, ``spec/by_release.py``)."""
    if by_release.parse_release(name_or_path) is not None:
        catalog = list_variants(folder, switches_type, invariants, assumptions)
        resolved: Variant = by_release.resolve(name_or_path, variants=catalog).variant
        return resolved
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml":
        if not candidate.exists():
            raise KvproofInputError("no such variant file", name_or_path)
        return load_variant_file(candidate, switches_type, invariants, assumptions)
    path = _folder(folder) / f"{name_or_path}.toml"
    if not path.is_file():
        raise by_release.no_such_variant(name_or_path, folder, catalog=folder == VARIANTS_DIR)
    return load_variant_file(path, switches_type, invariants, assumptions)
