"""Named variants: real engine versions and configurations, buggy and fixed.

A variant is the contract between the model and the engine: the same TOML file sets the
model's behaviour switches and configures the reference engine (see ``spec/handoff.md``).
Loading is strict: an unknown key, a missing key or a bad value is a ``KvproofInputError``
naming the file and the key, never a silent default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from kvproof.spec.assumptions import check_assume
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.files import read_text
from kvproof.spec.invariants import INVARIANTS, VERDICTS, check_expect
from kvproof.spec.lines import key_lines
from kvproof.spec.liveness import split_expect
from kvproof.spec.names import did_you_mean
from kvproof.spec.switches import CHOICES as CHOICES
from kvproof.spec.switches import Switches as Switches
from kvproof.spec.upstream import Upstream, parse_upstream

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"


@dataclass(frozen=True)
class Sizes:
    """Pool and context sizes in tokens, with the page size."""

    context_len: int
    prefill_pool_tokens: int
    decode_pool_tokens: int
    page_size: int


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str
    version: str
    summary: str
    sources: tuple[str, ...]
    switches: Switches
    deployment: Sizes  # the real deployment's numbers (audit, docs)
    engine_sizes: Sizes  # the same ratios, scaled down for the reference engine
    expect: Mapping[str, str]  # invariant name -> "holds" | "violated"
    counterpart: str | None  # the fixed (or buggy) variant this one pairs with
    path: Path
    # BMC depth that reaches every expected violation (a violation that only follows an
    # earlier one, e.g. a stale read after a stray write, can need a few more steps).
    bmc_depth: int = 12
    # The environment assumptions the verdicts rely on (``spec/assumptions.py``): name ->
    # why they hold for this engine (the bound, the setting), in file order.
    assume: Mapping[str, str] = field(default_factory=dict)
    # ``check --all`` also checks every depth at its size (``check --complete``) for this one.
    complete: bool = False
    # What ``kvproof variants`` marks it as: the incident's release or the recommended one.
    role: str | None = None
    upstream: Upstream | None = None  # which shipped releases it is (``spec/upstream.py``)
    lines: Mapping[str, int] = field(default_factory=dict)  # "expect.isolation" -> line
    # Liveness property -> "holds" | "violated" (optional keys of the [expect] table).
    expect_liveness: Mapping[str, str] = field(default_factory=dict)
    # What ``kvproof demo incident`` shows here: clean, leak or wrong_answer (its prediction,
    # held true by ``tests/refimpl/test_demo_expect.py``).
    demo: str = "clean"

    @property
    def buggy(self) -> bool:
        return any(v == "violated" for v in self.expect.values())


_TOP_KEYS = {
    "name": str,
    "engine": str,
    "version": str,
    "summary": str,
    "sources": list,
    "counterpart": str,
    "bmc_depth": int,
    "switches": dict,
    "deployment": dict,
    "engine_sizes": dict,
    "expect": dict,
    "assume": dict,
    "complete": bool,
    "role": str,
    "upstream": dict,
    "demo": str,
}
_OPTIONAL = {"counterpart", "bmc_depth", "assume", "complete", "role", "upstream", "demo"}
ROLES = ("incident", "recommended")
DEMO_OUTCOMES = ("clean", "leak", "wrong_answer")

# The invariants a variant's [expect] table must name: kvproof's (None), a fixed set, or a
# function of the parsed switches (a user protocol names its invariants once, in its DSL).
InvariantNames = Collection[str] | Callable[[Any], Collection[str]] | None
# The assumptions a variant's [assume] table may name: kvproof's (None) or a fixed set.
AssumptionNames = Collection[str] | None


def _check_table(data: Mapping[str, Any], cls: type, path: Path, table: str) -> dict[str, Any]:
    want = {f.name: f.type for f in fields(cls)}
    # Keys with a default may be left out (a switch added later: older files stay valid).
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    # A user protocol's switches dataclass lists its enumerated values in ``CHOICES``.
    choices: Mapping[str, tuple[str, ...]] = (
        CHOICES if cls is Switches else getattr(cls, "CHOICES", {})
    )
    for key in data:
        if key not in want:
            hint = did_you_mean(key, want)
            raise KvproofInputError(f"unknown key '{table}.{key}'{hint}", str(path))
    out: dict[str, Any] = {}
    for name, typ in want.items():
        if name not in data:
            if name in defaults:
                out[name] = defaults[name]
                continue
            raise KvproofInputError(f"missing key '{table}.{name}'", str(path))
        value = data[name]
        if typ in ("bool", bool):
            if not isinstance(value, bool):
                raise KvproofInputError(
                    f"'{table}.{name}' must be true or false, got {value!r}", str(path)
                )
        elif typ in ("int", int):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise KvproofInputError(
                    f"'{table}.{name}' must be a positive integer, got {value!r}", str(path)
                )
        elif name in choices and value not in choices[name]:
            allowed = ", ".join(choices[name])
            raise KvproofInputError(
                f"'{table}.{name}' must be one of {allowed}, got {value!r}", str(path)
            )
        out[name] = value
    return out


def _sizes(data: Any, path: Path, table: str) -> Sizes:
    if not isinstance(data, dict):
        raise KvproofInputError(f"'{table}' must be a table", str(path))
    sizes = Sizes(**_check_table(data, Sizes, path, table))
    if sizes.context_len < sizes.page_size:
        raise KvproofInputError(f"'{table}.context_len' is smaller than a page", str(path))
    return sizes


def parse_variant(
    text: str,
    path: Path,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    """Parse and validate one variant file's text.

    ``switches_type`` and ``invariants`` let a user protocol (``--protocol``) have its own
    variants: its own frozen switches dataclass (enumerated values in a ``CHOICES`` class
    attribute) and its own invariant names. The defaults are kvproof's handoff.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KvproofInputError(f"malformed TOML: {exc}", str(path)) from None
    for key in data:
        if key not in _TOP_KEYS:
            raise KvproofInputError(f"unknown key '{key}'{did_you_mean(key, _TOP_KEYS)}", str(path))
    for key, typ in _TOP_KEYS.items():
        if key not in data:
            if key in _OPTIONAL:
                continue
            raise KvproofInputError(f"missing key '{key}'", str(path))
        if typ is bool and not isinstance(data[key], bool):
            got = data[key]
            raise KvproofInputError(f"'{key}' must be true or false, got {got!r}", str(path))
        if not isinstance(data[key], typ):
            raise KvproofInputError(f"'{key}' must be a {typ.__name__}", str(path))
    switches = switches_type(**_check_table(data["switches"], switches_type, path, "switches"))
    if getattr(switches, "radix_cache", "off") != "off" and not switches.decode_prefix_cache:
        raise KvproofInputError(
            "'switches.radix_cache' needs 'switches.decode_prefix_cache = true'", str(path)
        )
    names = _invariant_names(invariants, switches)
    safety, expect_liveness = split_expect(data["expect"], path, VERDICTS)
    expect = check_expect(safety, names, path)
    for key, allowed in (("role", ROLES), ("demo", DEMO_OUTCOMES)):
        if data.get(key, allowed[0]) not in allowed:
            got = data[key]
            raise KvproofInputError(
                f"'{key}' must be one of {', '.join(allowed)}, got {got!r}", str(path)
            )
    sources = data["sources"]
    if not sources or not all(isinstance(s, str) for s in sources):
        raise KvproofInputError("'sources' must be a non-empty list of strings", str(path))
    upstream = parse_upstream(data["upstream"], path, data) if "upstream" in data else None
    return Variant(
        name=data["name"],
        engine=data["engine"],
        version=data["version"],
        summary=data["summary"],
        sources=tuple(sources),
        switches=switches,
        deployment=_sizes(data["deployment"], path, "deployment"),
        engine_sizes=_sizes(data["engine_sizes"], path, "engine_sizes"),
        expect=expect,
        counterpart=data.get("counterpart"),
        path=path,
        bmc_depth=_depth(data.get("bmc_depth", 12), path),
        assume=check_assume(data.get("assume", {}), path, assumptions),
        complete=data.get("complete", False),
        role=data.get("role"),
        upstream=upstream,
        lines=key_lines(text),
        expect_liveness=expect_liveness,
        demo=data.get("demo", "clean"),
    )


def _invariant_names(invariants: InvariantNames, switches: Any) -> tuple[str, ...]:
    if invariants is None:
        return tuple(INVARIANTS)
    if callable(invariants):
        return tuple(invariants(switches))
    return tuple(invariants)


def _depth(value: object, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
        raise KvproofInputError(f"'bmc_depth' must be an integer 1..64, got {value!r}", str(path))
    return value


def load_variant_file(
    path: Path,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    text = read_text(path, "variant")
    variant = parse_variant(text, path, switches_type, invariants, assumptions)
    if variant.name != path.stem:
        raise KvproofInputError(
            f"'name' is {variant.name!r} but the file is named {path.stem!r}", str(path)
        )
    return variant


def list_variants(
    folder: Path = VARIANTS_DIR,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> list[Variant]:
    """Every variant in ``folder``, sorted by name (a folder without any is bad input)."""
    paths = sorted(_folder(folder).glob("*.toml"))
    if not paths:
        raise KvproofInputError("no variant files (*.toml) in this folder", str(folder))
    return [load_variant_file(p, switches_type, invariants, assumptions) for p in paths]


def _folder(folder: Path) -> Path:
    if not folder.exists():
        raise KvproofInputError("no such variants folder", str(folder))
    if not folder.is_dir():
        raise KvproofInputError("variants folder is not a folder", str(folder))
    return folder


def load_variant(
    name_or_path: str,
    folder: Path = VARIANTS_DIR,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    """A variant by name (from ``folder``), by the path of a ``.toml`` file, or by a release
    (``sglang==0.5.20``: the variant whose ``[upstream]`` lists it, ``spec/by_release.py``)."""
    from kvproof.spec import by_release

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
