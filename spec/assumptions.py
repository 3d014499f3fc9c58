"""The environment assumptions the handoff protocol declares (prose in ``handoff.md``).

A proof of a real engine is a proof *under* assumptions about its environment: the network
delivers a write within the release timeout, a lease is renewed while a read runs. The
protocol declares each one here (name, statement, where the fact comes from); a variant
lists the ones its verdict relies on in its ``[assume]`` table; the model realises each as
a guard on an environment action (``model/handoff/assumptions.py``); ``kvproof check VARIANT
--without NAME`` drops one and shows the counterexample it was hiding.

Two kinds (issue #29). A ``guard`` assumption forbids the environment a move (a guard on a
fault action). A ``fairness`` assumption promises the environment eventually makes one:
each event it names gets weak fairness in liveness checks (an instance enabled throughout
a lasso's loop must be taken in it), and safety checks ignore it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import did_you_mean


@dataclass(frozen=True)
class AssumptionInfo:
    name: str
    text: str  # what the environment is assumed to do, in one sentence
    source: str  # where the bound comes from, and where it is known to fail
    # Assumptions that state the opposite: listing both describes no environment.
    excludes: tuple[str, ...] = ()
    kind: str = "guard"  # GUARD or FAIRNESS
    # fairness: the events (spec/events.py) made weakly fair, where the protocol has them.
    events: tuple[str, ...] = ()


GUARD = "guard"
FAIRNESS = "fairness"


_ALL = (
    AssumptionInfo(
        "bounded_transfer",
        "prefill's transfer of a request ends (every posted write has landed and no further"
        " write is posted) before decode's deferred-release timeout fires",
        "SGLang env SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT (30 s, decode"
        " frees on ABORT_ACK or on this timeout: DecodeTransferQueue.resolve_deferred_releases"
        " in sglang/srt/disaggregation/decode.py, 0.5.19-0.5.23); a later UniFlow backend"
        " design note says the 30 s equals the default transfer timeout and 'a put that"
        " stalls to its deadline can still be writing when decode releases the pages'"
        " (docs/upstream.md#uniflow-design-note)",
        excludes=("stalled_transfer",),
    ),
    AssumptionInfo(
        "stalled_transfer",
        "a write of the request is still in flight when decode's release timeout fires (the"
        " scenario, not a guarantee: it focuses a check on the stall)",
        "a UniFlow backend design note: an RDMA shutdown after a failed put has no deadline"
        " (docs/upstream.md#uniflow-design-note)",
        excludes=("bounded_transfer",),
    ),
    AssumptionInfo(
        "failed_is_drained",
        "a transfer reported Failed has no write of it still in flight",
        "Mooncake getBatchTransferStatus returns FAILED as soon as one task failed while"
        " others may still be in flight (kvcache-ai/Mooncake, docs/upstream.md#mooncake);"
        " vLLM #56104 (a failed handle while sibling handles still wrote)",
    ),
    AssumptionInfo(
        "lease_outlives_read",
        "prefill's block lease does not expire before decode's read of the blocks has ended",
        "vLLM NixlConnector kv_lease_duration (30 s) renewed by heartbeats (#41383); a read"
        " after expiry is only logged ('Potentially invalid KV blocks for unrecognized"
        " request', #52234); decode-side expiry check #32208 open (docs/upstream.md#vllm)",
    ),
    AssumptionInfo(
        "silent_peer_is_stopped",
        "a prefill that decode gives up on (its waiting timeout, or heartbeats declaring the"
        " prefill dead) has stopped writing: no write is in flight and none will be posted",
        "SGLang env SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) and"
        " SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL (5 s) x _HEARTBEAT_MAX_FAILURE (2)"
        " (srt/environ.py, 0.5.19-0.5.23; docs/upstream.md#sglang-release-code); a missed"
        " heartbeat or a slow transfer is not a stopped writer",
    ),
)

_FAIRNESS = (
    AssumptionInfo(
        "transfer_eventually_ends",
        "no transfer, and no wait of decode's on one, lasts forever: while it does, the"
        " network eventually reports it failed, or decode's waiting timeout or its"
        " deferred-release timeout eventually fires (the clocks run); weaker than"
        " bounded_transfer, which also says the transfer ends before the release timeout",
        "Mooncake reports a failed or timed-out batch FAILED; SGLang's"
        " SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) and"
        " SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT (30 s) are timers that fire",
        kind=FAIRNESS,
        events=("fail", "give_up", "timeout"),
    ),
    AssumptionInfo(
        "prefill_eventually_reports",
        "the prefill serving a request never dies silently: it eventually concludes the"
        " transfer, processes the ABORT and ACKs the drain (its report and ACK steps stay"
        " fair: the crash fault is left out). silent_peer_is_stopped is the safety half of"
        " the same peer: when decode gives up on a prefill, that prefill writes nothing more;"
        " this one is the liveness half: a prefill decode waits for does answer",
        "vLLM #46283 (push mode leaks blocks when prefill never reports; #46289 proposes a"
        " reclaim deadline); SGLang's quarantine branch holds a dead peer's pages until worker"
        " recovery; a later UniFlow backend design note: a raising shutdown sends neither"
        " Failed nor ABORT_ACK",
        kind=FAIRNESS,
        events=("done", "abort_seen", "ack"),
    ),
)

ASSUMPTIONS: dict[str, AssumptionInfo] = {a.name: a for a in _ALL + _FAIRNESS}


def of_kind(names: Collection[str], kind: str) -> tuple[str, ...]:
    """The assumptions among ``names`` of ``kind`` (an unregistered name is a guard:
    a user protocol's own assumptions are guards)."""
    return tuple(n for n in names if (ASSUMPTIONS[n].kind if n in ASSUMPTIONS else GUARD) == kind)


def contradiction(names: tuple[str, ...] | list[str]) -> tuple[str, str] | None:
    """The first pair of ``names`` that exclude each other, if any."""
    for i, a in enumerate(names):
        info = ASSUMPTIONS.get(a)
        for b in names[i + 1 :]:
            other = ASSUMPTIONS.get(b)
            if (info and b in info.excludes) or (other and a in other.excludes):
                return a, b
    return None


def check_assume(
    table: Mapping[str, Any], path: Path, declared: Collection[str] | None
) -> dict[str, str]:
    """The ``[assume]`` table: each key an assumption the protocol declares, each value a
    non-empty string saying why it holds here; no two that exclude each other."""
    names = tuple(ASSUMPTIONS) if declared is None else tuple(declared)
    for name, why in table.items():
        if name not in names:
            known = ", ".join(names) or "none: the protocol declares no assumptions"
            raise KvproofInputError(
                f"unknown assumption 'assume.{name}'{did_you_mean(name, names)} (known: {known})",
                str(path),
            )
        if not isinstance(why, str) or not why.strip():
            raise KvproofInputError(
                f"'assume.{name}' must be a string saying why it holds, got {why!r}", str(path)
            )
    clash = contradiction(list(table))
    if clash is not None:
        raise KvproofInputError(
            f"contradictory assumptions 'assume.{clash[0]}' and 'assume.{clash[1]}'", str(path)
        )
    return dict(table)
