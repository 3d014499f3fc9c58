"""The engine releases kvproof knows, from ``spec/releases.toml``: one home for them.

```python
from kvproof.spec import releases

releases.sglang()                     # every known SGLang release, oldest first
releases.get("sglang", "0.5.20")      # one Release (KeyError-free: None when unknown)
r.adapter                             # "0.5.19-0.5.20", or None (then r.no_adapter says why)
r.default("deferred_release")         # False: the release's own default ...
r.env("deferred_release")             # ... under this env name
r.fact("intake_retires_over_long")    # a behaviour read from the wheel
releases.adapted("sglang")            # the versions a conform adapter drives
```

Every value carries the wheel's ``file::symbol`` it was read from (``Setting.source``);
``tests/spec/test_releases.py`` re-reads the defaults from the cached wheels.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kvproof.spec.upstream import version_key

__all__ = ["Release", "Setting", "adapted", "get", "known", "sglang", "version_key"]

TABLE = Path(__file__).with_name("releases.toml")

Value = bool | int | float | str


@dataclass(frozen=True)
class Setting:
    """A default (with ``env``) or a behaviour (``env`` empty) of one release."""

    name: str
    value: Value
    source: str  # the wheel's file::symbol
    env: str = ""


@dataclass(frozen=True)
class Release:
    engine: str
    version: str
    adapter: str | None  # the conform adapter's name (``checker/upstream/adapters/``)
    no_adapter: str | None  # why none: the first function or module that differs
    defaults: tuple[Setting, ...]
    facts: tuple[Setting, ...]

    def default(self, name: str) -> Value | None:
        """The release's default for ``name`` (None: the release has no such switch)."""
        return next((s.value for s in self.defaults if s.name == name), None)

    def env(self, name: str) -> str | None:
        return next((s.env for s in self.defaults if s.name == name), None)

    def fact(self, name: str) -> Value | None:
        return next((s.value for s in self.facts if s.name == name), None)


def sglang() -> tuple[Release, ...]:
    """Every SGLang release in the table, oldest first."""
    return _load()["sglang"]


def get(engine: str, version: str) -> Release | None:
    return next((r for r in _load().get(engine, ()) if r.version == version), None)


def adapted(engine: str) -> tuple[str, ...]:
    """The versions a conform adapter drives, oldest first."""
    return tuple(r.version for r in _load().get(engine, ()) if r.adapter)


def known(engine: str) -> tuple[str, ...]:
    return tuple(r.version for r in _load().get(engine, ()))


@cache
def _load() -> dict[str, tuple[Release, ...]]:
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    out: dict[str, tuple[Release, ...]] = {}
    for engine, table in data.items():
        rows = [_release(engine, version, row) for version, row in table.items()]
        out[engine] = tuple(sorted(rows, key=lambda r: version_key(r.version)))
    return out


def _release(engine: str, version: str, row: dict[str, Any]) -> Release:
    adapter, why = row.get("adapter"), row.get("no_adapter")
    # A bug in the shipped table, not user input: fail loudly in tests.
    assert (adapter is None) != (why is None), f"{engine} {version}: adapter xor no_adapter"
    return Release(
        engine,
        version,
        adapter,
        why,
        tuple(
            Setting(s["name"], s["value"], s["source"], s.get("env", "")) for s in row["defaults"]
        ),
        tuple(Setting(s["name"], s["value"], s["source"]) for s in row.get("facts", ())),
    )
