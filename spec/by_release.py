"""Names by release: ``sglang==0.5.20`` to the variant that release's code is (issue 41).

An operator knows their release, not kvproof's variant names. Each variant's ``[upstream]``
table lists the releases whose own code ``kvproof conform`` agrees with, under the
``[upstream.env]`` and ``[upstream.server_args]`` it names (``spec/upstream.py``); this
module reads those tables backwards.

```python
from kvproof.spec.by_release import parse_release, resolve, release_span, suggest

parse_release("sglang==0.5.20")          # Release("sglang", "0.5.20"); None for a variant name
r = resolve("sglang==0.5.20")            # Resolution: r.variant (sglang-0.5.20-pd), r.why
resolve("sglang==0.5.22", env={"SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE": "false"})
                                         # sglang-pd-early-free-abort
release_span(variant)                    # "0.5.15-0.5.19" (or "" when none is listed)
suggest("sglang-0.5.18-pd")              # ["sglang-0.5.19-pd", ...]: the release's variant first
```

Settings decide between variants of one release: a variant fits when every env var and
server arg its table names has the value given, and every setting given that its table does
not name is at the release's default (``spec/releases.toml`` where it says; a value given
for a setting whose default kvproof does not know fits no variant that leaves it out).
Among the variants that fit, the one with a ``role`` (the incident's, the recommended one)
comes first, then the one whose ``version`` is the release, then by name; the others are
in ``Resolution.also`` (the same code with other environment assumptions, e.g.
``sglang-pd-deferred-timeout``: 0.5.22 when a transfer outlives the release timeout).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import did_you_mean, nearest
from kvproof.spec.upstream import is_version, version_key

if TYPE_CHECKING:
    from kvproof.spec.variant_file import Variant

_RELEASE = re.compile(r"^(?P<engine>[a-z][a-z0-9_-]*)==(?P<version>\S+)$")
_VERSION_IN = re.compile(r"\d+\.\d+(?:\.\d+){0,2}")


@dataclass(frozen=True)
class Release:
    engine: str
    version: str

    def __str__(self) -> str:
        return f"{self.engine}=={self.version}"


@dataclass(frozen=True)
class Resolution:
    variant: Variant
    release: Release | None  # what was typed, when it was a release
    why: str  # one sentence: how the name became this variant
    also: tuple[str, ...] = ()  # other variants of the same release and settings
    settings: Mapping[str, Any] = field(default_factory=dict)  # env and server args given


def parse_release(text: str) -> Release | None:
    """``ENGINE==VERSION`` (``sglang==0.5.20``), or None when ``text`` is not shaped so (a
    variant name or path); a release shape with a malformed version is bad input."""
    m = _RELEASE.match(text.strip())
    if m is None:
        return None
    if not is_version(m["version"]):
        raise KvproofInputError(
            f"{m['version']!r} is not a version like '0.5.22' (write ENGINE==VERSION)", text
        )
    return Release(m["engine"], m["version"])


def release_span(variant: Variant) -> str:
    """The releases a variant's ``[upstream]`` lists, as ``0.5.19-0.5.20`` where they run on
    (``0.5.21, 0.5.23`` where one is missing), or ``""``."""
    up = variant.upstream
    if up is None or not up.releases:
        return ""
    keys = [version_key(v) for v in up.releases]
    consecutive = all(a[:-1] == b[:-1] and b[-1] == a[-1] + 1 for a, b in pairwise(keys))
    if len(keys) > 1 and consecutive:
        return f"{up.releases[0]}-{up.releases[-1]}"
    return ", ".join(up.releases)


def variants_of(release: Release, variants: Sequence[Variant] | None = None) -> list[Variant]:
    """Every variant whose ``[upstream]`` lists ``release``, in catalog order."""
    return [
        v
        for v in _catalog(variants)
        if v.upstream is not None
        and v.upstream.engine == release.engine
        and release.version in v.upstream.releases
    ]


def resolve(
    text: str,
    *,
    env: Mapping[str, Any] | None = None,
    server_args: Mapping[str, Any] | None = None,
    variants: Sequence[Variant] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Resolution:
    """The variant ``text`` names: a release (``sglang==0.5.20``, under ``env`` and
    ``server_args``) or a variant name or path. ``defaults``: the release's own values of
    settings (env or server-arg name -> value; default: ``spec/releases.toml``'s where it
    exists). Bad input (a release no variant lists, settings no variant of it has) raises
    ``KvproofInputError`` naming the releases kvproof knows."""
    release = parse_release(text)
    if release is None:
        return Resolution(_by_name(text, variants), None, f"{text} is a variant name")
    given = {**(env or {}), **(server_args or {})}
    listed = variants_of(release, variants)
    if not listed:
        known = sorted(
            {
                r
                for v in _catalog(variants)
                if v.upstream
                for r in v.upstream.releases
                if v.upstream.engine == release.engine
            },
            key=version_key,
        )
        if not known:
            raise KvproofInputError(f"no variant lists a release of {release.engine}", text)
        raise KvproofInputError(
            f"no variant is {release}: the {release.engine} releases kvproof knows are "
            f"{_span(known)} ('kvproof variants' shows which variant each is)",
            text,
        )
    base = defaults if defaults is not None else release_defaults(release)
    fits = [v for v in listed if _fits(v, given, base)]
    if not fits:
        named = ", ".join(f"{k}={v}" for k, v in given.items())
        raise KvproofInputError(
            f"no variant is {release} with {named}: its variants are "
            f"{', '.join(_with_settings(v) for v in listed)}",
            text,
        )
    # fewest settings assumed, then the catalog's own pick (a role), then the variant named
    # after the release, then by name
    fits.sort(
        key=lambda v: (
            len(_unconfirmed(v, given, base)),
            v.role is None,
            v.version != release.version,
            v.name,
        )
    )
    best, also = fits[0], tuple(v.name for v in fits[1:])
    assumed = _unconfirmed(best, given, base)
    if assumed:
        under = f"assuming {', '.join(assumed)} (give the settings to choose)"
    else:
        under = _with_settings(best).removeprefix(best.name).strip() or "at the release defaults"
    why = f"{release} is {best.name}: its [upstream] lists {release_span(best)} {under}"
    if also:
        why += f" (also {release}, under other settings or assumptions: {', '.join(also)})"
    return Resolution(best, release, why, also, dict(given))


def suggest(name: str, variants: Sequence[Variant] | None = None, n: int = 3) -> list[str]:
    """Known variant names for a mistyped ``name``, best first. A release in the name that
    no variant is named after (``sglang-0.5.18-pd``) puts the variant of that release
    first (``sglang-0.5.19-pd``, which 0.5.18's code is), then the names nearest in
    spelling; otherwise spelling alone decides (``sglang-0.5.22-pd-guardd``)."""
    catalog = _catalog(variants)
    first = list(_release_picks(name, catalog))
    spelled = nearest(name, [v.name for v in catalog], n=n)
    return list(dict.fromkeys(first + spelled))[:n]


def _release_picks(name: str, catalog: Sequence[Variant]) -> dict[str, str]:
    """Variant name -> the release (``sglang==0.5.20``) in ``name`` it is, for each release
    ``name`` mentions that no variant is named after."""
    names = [v.name for v in catalog]
    engines = {v.upstream.engine for v in catalog if v.upstream is not None}
    named = [e for e in engines if name.startswith(e)] or sorted(engines)
    out: dict[str, str] = {}
    for version in _VERSION_IN.findall(name):
        if any(version in known for known in names):
            continue
        for engine in named:
            try:
                picked = resolve(f"{engine}=={version}", variants=catalog)
            except KvproofInputError:
                continue  # no variant is that release
            out.setdefault(picked.variant.name, str(picked.release))
    return out


def no_such_variant(name: str, folder: Path, *, catalog: bool) -> KvproofInputError:
    """The error for a variant name ``folder`` does not have: the nearest names (the
    release's first, ``hint``), not all of them on one line (``kvproof variants`` lists them)."""
    known = [p.stem for p in sorted(folder.glob("*.toml"))]
    if not known:
        return KvproofInputError(f"no such variant (no *.toml in {folder})", name)
    where = "" if catalog else f" --variants-dir {folder}"
    said = hint(name, known, catalog=catalog)
    return KvproofInputError(f"no such variant{said} ('kvproof variants{where}' lists them)", name)


def hint(name: str, known: Sequence[str], *, catalog: bool) -> str:
    """``"; did you mean 'x' (sglang==0.5.20's variant) or 'y'?"``: ``suggest``'s names for
    kvproof's ``catalog``, the nearest spellings among ``known`` for a user's folder."""
    if not catalog:
        return did_you_mean(name, known)
    best, ours = suggest(name), _release_picks(name, _catalog(None))
    if not best:
        return ""
    said = [f"'{b}'" + (f" ({ours[b]}'s variant)" if b in ours else "") for b in best]
    return "; did you mean " + " or ".join(said) + "?"


def say_release(names: Sequence[str], folder: Path | None = None) -> None:
    """On stderr, one line for each release among ``names`` (what a command was typed
    with): which variant it is and why, so ``check sglang==0.5.20`` says what it checks."""
    import sys

    from kvproof.spec.variant_file import VARIANTS_DIR, list_variants

    if not any(parse_release(n) for n in names):
        return
    catalog = list_variants(folder or VARIANTS_DIR)
    for name in names:
        if parse_release(name) is not None:
            print(f"kvproof: {resolve(name, variants=catalog).why}", file=sys.stderr)


def release_defaults(release: Release) -> dict[str, Any]:
    """The release's defaults by env name, from ``spec/releases.toml``
    (``kvproof.spec.releases``); none known for a release it does not list."""
    from kvproof.spec import releases

    row = releases.get(release.engine, release.version)
    if row is None:
        return {}
    return {s.env: s.value for s in row.defaults if s.env}


def _own(variant: Variant) -> dict[str, Any]:
    """The settings a variant's ``[upstream]`` names (a vLLM variant's transfer config too)."""
    up = variant.upstream
    tables = ("env", "server_args", "kv_transfer_config", "kv_connector_extra_config")
    return {k: v for t in tables for k, v in getattr(up, t, {}).items()}


def _fits(variant: Variant, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
    """No setting contradicts the variant: each it names is given, or the release's default,
    with its value, or unknown (neither given nor a known default: ``_unconfirmed``); each
    given that it does not name is at the release's known default."""
    own = _own(variant)
    for key, value in own.items():
        want = given.get(key, defaults.get(key))
        if want is not None and not _same(value, want):
            return False
    for key, value in given.items():
        if key in own:
            continue
        if key not in defaults or not _same(defaults[key], value):
            return False
    return True


def _unconfirmed(
    variant: Variant, given: Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[str]:
    """The settings the variant names that nothing given or known confirms (a vLLM
    deployment's ``kv_connector``, say, when none was given): assumed, and said so."""
    return [f"{k}={v}" for k, v in _own(variant).items() if k not in given and k not in defaults]


def _same(a: Any, b: Any) -> bool:
    """Setting values as a launch script or a TOML writes them: ``false`` = ``"0"``."""
    return bool(_norm(a) == _norm(b))


def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    try:
        return float(text)
    except ValueError:
        return text


def _with_settings(variant: Variant) -> str:
    own = _own(variant)
    if not own:
        return str(variant.name)
    return f"{variant.name} (with {', '.join(f'{k}={v}' for k, v in own.items())})"


def _span(versions: Sequence[str]) -> str:
    return f"{versions[0]} to {versions[-1]}" if len(versions) > 1 else versions[0]


def _catalog(variants: Sequence[Variant] | None) -> Sequence[Variant]:
    if variants is not None:
        return variants
    from kvproof.spec.variant_file import VARIANTS_DIR, list_variants

    return list_variants(Path(VARIANTS_DIR))


def _by_name(text: str, variants: Sequence[Variant] | None) -> Variant:
    """A variant by its ``.toml`` path or its name in the catalog (``spec/variant.py``'s
    ``load_variant`` without the release: this module must not import that one back)."""
    from kvproof.spec.variant_file import VARIANTS_DIR, load_variant_file

    if text.endswith(".toml"):
        if not Path(text).exists():
            raise KvproofInputError("no such variant file", text)
        return load_variant_file(Path(text))
    for v in _catalog(variants):
        if v.name == text:
            return v
    raise no_such_variant(text, Path(VARIANTS_DIR), catalog=variants is None)
