"""What an assumption asks of this deployment, in its own numbers.

An assumption (``spec/assumptions.py``) is stated once, for every deployment; an operator
needs it with their timeouts in it. The values are the ones the release's code ran under
(conform reads them through the release's ``envs``: ``Match.env``) or the operator's and
the release's defaults (``release_env.py``), each with where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RELEASE_TIMEOUT = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT"
WAITING_TIMEOUT = "SGLANG_DISAGGREGATION_WAITING_TIMEOUT"
HEARTBEAT = "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL"
HEARTBEAT_FAILURES = "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE"


def _n(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def meaning(name: str, values: Mapping[str, Any], source: Mapping[str, str], text: str) -> str:
    """``name`` for this deployment; ``text`` (the declared sentence) when it names no
    setting of the release."""

    def val(key: str) -> str:
        return f"{_n(values.get(key, '?'))} s ({key}, {source.get(key, 'release default')})"

    if name == "bounded_transfer":
        return (
            f"every KV transfer must end before decode's release timeout, {val(RELEASE_TIMEOUT)}; "
            f"your deployment lets a transfer run up to {val(WAITING_TIMEOUT)} before decode "
            "gives up, so nothing in the settings stops a transfer that stalls past the release "
            "timeout: keep transfers well under it (watch the transfer latency; "
            "`kvproof audit` reads it from /metrics)"
        )
    if name == "transfer_eventually_ends":
        return (
            "the transfer engine (Mooncake) must report every failed batch FAILED, and decode's "
            f"timers must fire: the waiting timeout, {val(WAITING_TIMEOUT)}, and the release "
            f"timeout, {val(RELEASE_TIMEOUT)}"
        )
    if name == "silent_peer_is_stopped":
        beats = f"{_n(values.get(HEARTBEAT_FAILURES, '?'))} missed heartbeats"
        return (
            "a prefill that decode gives up on (its waiting timeout, "
            f"{val(WAITING_TIMEOUT)}, or {beats} {_n(values.get(HEARTBEAT, '?'))} s apart) "
            "must really have stopped writing: a slow but live prefill breaks it"
        )
    if name == "lease_outlives_read":
        lease = values.get("kv_lease_duration", "?")
        where = source.get("kv_lease_duration", "release default")
        return (
            f"decode's read of a request's blocks must end before prefill's lease expires, "
            f"kv_lease_duration = {_n(lease)} s ({where}), which decode's heartbeats renew "
            "only while they arrive: a read after expiry is only logged ('Potentially invalid "
            "KV blocks')"
        )
    return text
