"""SGLang's PD environment variables as the audit reads them: names and types from
``spec/releases.toml``, defaults per release through ``release.default`` (each read from a
release wheel's ``environ.py::Envs`` or, before ``environ.py``, ``mooncake/conn.py``;
``tests/spec/test_releases.py`` re-reads them).

Deferred KV release (``SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE``) is the one whose
default changed: ``EnvBool(False)`` ("Off by default", #35049) in 0.5.19 and 0.5.20,
``EnvBool(True)`` from 0.5.21; before 0.5.19 the machinery is not there at all
(``deferred_release_machinery = false``), so it is off.

``/server_info`` lists variables under ``internal_states[i].env_vars`` only when the server
ran with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``, and then only those set explicitly
(``exportable_env_vars``: ``field.name in os.environ``, secrets excluded). So an exposed
environment without a variable means "the default"; no environment at all means "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kvproof.ops.audit import release
from kvproof.ops.audit.facts import Fact, Value
from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

# Not a PD setting: whether /server_info lists the environment at all (environ.py, 0.5.19+).
EXPOSE = "SGLANG_EXPOSE_OWN_ENV_VARS"

# The settings the audit reads, by their name in spec/releases.toml (and the audit's fact).
AUDITED = (
    "deferred_release",
    "release_timeout_s",
    "waiting_timeout_s",
    "bootstrap_timeout_s",
    "heartbeat_interval_s",
    "heartbeat_max_failure",
)


@dataclass(frozen=True)
class EnvVar:
    name: str  # the environment variable
    fact: str
    kind: type  # bool | int | float: what the release's Env type parses


def _declared(fact: str) -> tuple[str, type]:
    """The variable's name and type, from the newest release that declares it."""
    for rel in reversed(releases.sglang()):
        value = rel.default(fact)
        env = rel.env(fact)
        if value is not None and env:
            return env, type(value)
    raise KeyError(f"{fact}: in no release of spec/releases.toml")  # a bug in the table


def _var(fact: str) -> EnvVar:
    name, kind = _declared(fact)
    return EnvVar(name, fact, kind)


VARS = tuple(_var(fact) for fact in AUDITED)
BY_FACT = {v.fact: v for v in VARS}
DEFERRED = BY_FACT["deferred_release"].name
DEFERRED_TIMEOUT = BY_FACT["release_timeout_s"].name
WAITING_TIMEOUT = BY_FACT["waiting_timeout_s"].name
BOOTSTRAP_TIMEOUT = BY_FACT["bootstrap_timeout_s"].name


DEFERRED_DEFAULT_ON = release.first("deferred_release", True)

# environ.py EnvBool accepts these spellings (case-insensitive).
_TRUE = ("1", "true", "yes", "y", "on")
_FALSE = ("0", "false", "no", "n", "off", "")


def is_secret(name: str) -> bool:
    """Variables whose values are never read into a fact, printed or quoted in an error."""
    upper = name.upper()
    return any(word in upper for word in ("KEY", "TOKEN", "SECRET", "PASSWORD"))


def convert(var: EnvVar, raw: object, where: str) -> Value:
    """The variable's value, typed; a wrong type names the place and key, not the value."""
    if not isinstance(raw, str):
        raise KvproofInputError("must be a string (environment value)", where)
    text = raw.strip()
    if var.kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise KvproofInputError("must be a boolean (1/0, true/false)", where)
    try:
        return int(text) if var.kind is int else float(text)
    except ValueError:
        raise KvproofInputError(f"must be a number ({var.kind.__name__})", where) from None


def env_facts(env: Mapping[str, tuple[object, str]], listing: str) -> dict[str, Fact]:
    """Facts from an environment listing: ``env`` maps a name to (raw value, where it was
    read); ``listing`` names the listing itself, which makes ``env_exposed`` true."""
    facts = {"env_exposed": Fact(True, listing)}
    for var in VARS:
        if var.name in env:
            raw, where = env[var.name]
            facts[var.fact] = Fact(convert(var, raw, where), where)
    return facts
