"""A variant's ``[upstream]`` table: which shipped releases of its engine it is, and under
which settings (``kvproof conform`` runs the release's own code under them).

```toml
[upstream]
engine = "sglang"
releases = ["0.5.21", "0.5.22", "0.5.23"]   # each one `kvproof conform` agrees with
# or, when no release is this variant: exempt = "why (kvproof's design, a proposal, ...)"

[upstream.env]                               # over the release's defaults (srt/environ.py)
SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE = false

[upstream.server_args]                       # over the release's ServerArgs defaults
disaggregation_transfer_backend = "mooncake"
```

A vLLM variant (engine ``vllm``) names its ``--kv-transfer-config`` instead
(``vllm/config/kv_transfer.py::KVTransferConfig``), its extra config apart:

```toml
[upstream]
engine = "vllm"
releases = ["0.34.0"]

[upstream.kv_transfer_config]                # KVTransferConfig fields (NixlConnector implied)
kv_load_failure_policy = "fail"

[upstream.kv_connector_extra_config]         # read with get_from_extra_config
transfer_mode = "push"
kv_lease_duration = 30
```

``releases`` is the variant's parseable release field: ``tests/checker/
conform/test_catalog_conforms.py`` runs ``conform`` on each listed release, so the list stays what
the code does. Whether an env or server-arg name is real is a question for the release's
code, so ``conform`` checks the names (``checker/upstream/settings.py``); here only the
shape of the table is checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import did_you_mean

_KEYS = (
    "engine",
    "releases",
    "exempt",
    "env",
    "server_args",
    "kv_transfer_config",
    "kv_connector_extra_config",
)
# The settings tables each engine takes (a vLLM variant has no ServerArgs, and so on).
_SETTINGS = {
    "sglang": ("env", "server_args"),
    "vllm": ("env", "kv_transfer_config", "kv_connector_extra_config"),
}
_VERSION = re.compile(r"^\d+(\.\d+){1,3}$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ARG_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

Scalar = bool | int | float | str


@dataclass(frozen=True)
class Upstream:
    engine: str
    # The releases the variant conforms to, oldest first (empty when ``exempt``).
    releases: tuple[str, ...] = ()
    # Why no release is listed: kvproof's own design, an unmerged proposal, or no shipped
    # release has the behaviour under any setting (with the evidence).
    exempt: str | None = None
    env: Mapping[str, Scalar] = field(default_factory=dict)
    server_args: Mapping[str, Scalar] = field(default_factory=dict)
    # vLLM: KVTransferConfig fields, and its kv_connector_extra_config.
    kv_transfer_config: Mapping[str, Scalar] = field(default_factory=dict)
    kv_connector_extra_config: Mapping[str, Scalar] = field(default_factory=dict)

    @property
    def latest(self) -> str | None:
        """The newest conforming release (``conform``'s default ``--sglang``)."""
        return self.releases[-1] if self.releases else None


def is_version(text: str) -> bool:
    """``0.5.22``-shaped: two to four dot-separated numbers."""
    return bool(_VERSION.match(text))


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def parse_upstream(data: Any, path: Path, variant: Mapping[str, Any]) -> Upstream:
    """The ``[upstream]`` table of the variant file at ``path`` (``variant``: its top-level
    keys, already checked: ``engine`` and ``version`` are strings)."""
    where = str(path)
    engine, version = variant["engine"], variant["version"]
    if not isinstance(data, dict):
        raise KvproofInputError("'upstream' must be a table", where)
    for key in data:
        if key not in _KEYS:
            raise KvproofInputError(
                f"unknown key 'upstream.{key}'{did_you_mean(key, _KEYS)}", where
            )
    name = data.get("engine")
    if not isinstance(name, str):
        raise KvproofInputError("'upstream.engine' must be a string (the engine's name)", where)
    if name != engine:
        raise KvproofInputError(
            f"'upstream.engine' is {name!r} but the variant's engine is {engine!r}", where
        )
    allowed = _SETTINGS.get(name, ("env", "server_args"))
    for table in _KEYS[3:]:
        if table in data and table not in allowed:
            raise KvproofInputError(
                f"'upstream.{table}' is not a setting of {name} (it takes: {', '.join(allowed)})",
                where,
            )
    releases = _releases(data.get("releases", []), where)
    exempt = data.get("exempt")
    if exempt is not None and (not isinstance(exempt, str) or not exempt.strip()):
        raise KvproofInputError("'upstream.exempt' must be a string saying why", where)
    if releases and exempt is not None:
        raise KvproofInputError(
            "'upstream.releases' and 'upstream.exempt' both given: a variant that conforms "
            "to a release is not exempt",
            where,
        )
    if not releases and exempt is None:
        raise KvproofInputError(
            "'upstream' needs 'releases' (the releases it conforms to) or 'exempt' (why none)",
            where,
        )
    # A ``version`` that names one release must be one the variant conforms to (the
    # early-free variant once said "<0.5.22" while only 0.5.21+ with deferred release off
    # showed its behaviour).
    if releases and is_version(version) and version not in releases:
        raise KvproofInputError(
            f"'version' is {version!r} but 'upstream.releases' lists {', '.join(releases)}",
            where,
        )
    return Upstream(
        engine=name,
        releases=releases,
        exempt=exempt,
        env=_scalars(data.get("env", {}), "env", _ENV_NAME, where),
        server_args=_scalars(data.get("server_args", {}), "server_args", _ARG_NAME, where),
        kv_transfer_config=_scalars(
            data.get("kv_transfer_config", {}), "kv_transfer_config", _ARG_NAME, where
        ),
        kv_connector_extra_config=_scalars(
            data.get("kv_connector_extra_config", {}), "kv_connector_extra_config", _ARG_NAME, where
        ),
    )


def _releases(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KvproofInputError("'upstream.releases' must be a list of version strings", where)
    for version in value:
        if not is_version(version):
            raise KvproofInputError(
                f"'upstream.releases' has {version!r}, which is not a version like '0.5.22'",
                where,
            )
    if len(set(value)) != len(value):
        raise KvproofInputError("'upstream.releases' lists a release twice", where)
    return tuple(sorted(value, key=version_key))


def _scalars(value: Any, table: str, pattern: re.Pattern[str], where: str) -> dict[str, Scalar]:
    if not isinstance(value, dict):
        raise KvproofInputError(f"'upstream.{table}' must be a table", where)
    for key, item in value.items():
        if not pattern.match(key):
            raise KvproofInputError(
                f"'upstream.{table}.{key}' is not shaped like "
                f"{'an env name (UPPER_CASE)' if table == 'env' else 'a config key (snake_case)'}",
                where,
            )
        if not isinstance(item, bool | int | float | str):
            raise KvproofInputError(
                f"'upstream.{table}.{key}' must be a string, number or boolean, got {item!r}",
                where,
            )
    return dict(value)
