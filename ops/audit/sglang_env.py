"""SGLang's PD environment variables: names, types, defaults, and where each default held.

Names and defaults from python/sglang/srt/environ.py (``class Envs``), read in the release
wheels 0.5.19 to 0.5.23: ``SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE =
EnvBool(False)`` ("Off by default", #35049) in 0.5.19 and 0.5.20, ``EnvBool(True)`` from
0.5.21 (docs/upstream.md#sglang-release-code; ``tests/checker/test_conform_facts.py`` asks
each release).

``/server_info`` lists variables under ``internal_states[i].env_vars`` only when the server
ran with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``, and then only those set explicitly
(``exportable_env_vars``: ``field.name in os.environ``, secrets excluded). So an exposed
environment without a variable means "the default"; no environment at all means "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kvproof.ops.audit.facts import Fact, Value
from kvproof.spec.errors import KvproofInputError

EXPOSE = "SGLANG_EXPOSE_OWN_ENV_VARS"
DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"
DEFERRED_TIMEOUT = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT"
WAITING_TIMEOUT = "SGLANG_DISAGGREGATION_WAITING_TIMEOUT"
BOOTSTRAP_TIMEOUT = "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"

# The first release with deferred release on by default (see the module docstring).
DEFERRED_DEFAULT_ON = (0, 5, 21)


@dataclass(frozen=True)
class EnvVar:
    name: str
    fact: str
    kind: type  # bool | int | float
    default: Value | None  # None: depends on the version (DEFERRED)


VARS = (
    EnvVar(DEFERRED, "deferred_release", bool, None),
    EnvVar(DEFERRED_TIMEOUT, "release_timeout_s", float, 30.0),
    EnvVar(WAITING_TIMEOUT, "waiting_timeout_s", float, 300.0),
    EnvVar(BOOTSTRAP_TIMEOUT, "bootstrap_timeout_s", float, 300.0),
    EnvVar("SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", "heartbeat_interval_s", float, 5.0),
    EnvVar("SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE", "heartbeat_max_failure", int, 2),
)
BY_FACT = {v.fact: v for v in VARS}

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
