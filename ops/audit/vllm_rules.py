"""vLLM's NIXL connector: the prefill lease against what the logs and metrics saw.

Prefill keeps a finished request's blocks for ``kv_lease_duration`` seconds (default 30,
``get_from_extra_config("kv_lease_duration", 30)``; renewed by decode heartbeats, #41383).
A decode read after expiry is only logged by prefill ("Potentially invalid KV blocks for
unrecognized request ... They may have expired.") and the request still answers 200; the
decode-side expiry check (#32208) was still open. Both rules rest on ``lease_outlives_read``
(a read finishes before the lease frees its blocks: the assumption of ``vllm-nixl-fixed``
that ``vllm-stale-block-lease`` drops); variant ``vllm-stale-block-lease``.

- ``lease-read-after-expiry`` (high): the log holds such lines.
- ``lease-shorter-than-transfer`` (medium): a NIXL transfer in the metrics took longer
  than the lease.
- ``nixl-push-mode`` (info): push mode; a request whose prefill never reports keeps its
  decode blocks (#46283, open).
"""

from __future__ import annotations

from kvproof.ops.audit.deployment import Deployment, Node
from kvproof.ops.audit.finding import AuditFinding, Severity

DEFAULT_LEASE_S = 30.0
LEASE_ASSUMPTION = "lease_outlives_read"  # spec/assumptions.py; vllm-nixl-fixed's [assume]
MODES = {"NixlConnector": "pull", "NixlPullConnector": "pull", "NixlPushConnector": "push"}
LEASE_ACTION = (
    'Raise the lease on prefill: --kv-transfer-config \'{"kv_connector":"NixlConnector",'
    '"kv_role":"kv_producer","kv_connector_extra_config":{"kv_lease_duration":120}}\' '
    "and check that decode's heartbeats reach prefill; a read after expiry answers 200 "
    "from blocks another request may own."
)


def transfer_mode(n: Node) -> str | None:
    return MODES.get(n.kv_connector or "")


def lease_s(n: Node) -> float | None:
    if transfer_mode(n) is None:
        return None
    return n.kv_lease_duration_s if n.kv_lease_duration_s is not None else DEFAULT_LEASE_S


def _vllm(dep: Deployment) -> list[Node]:
    return [n for n in dep.nodes if n.engine == "vllm"]


def _expired(n: Node) -> AuditFinding:
    return AuditFinding(
        id="lease-read-after-expiry",
        severity=Severity.HIGH,
        title=f"{n.name}: {n.lease_expired_reads} read(s) of KV blocks after their lease "
        "expired ('Potentially invalid KV blocks')",
        nodes=(n.name,),
        numbers={"lease_expired_reads": n.lease_expired_reads, "kv_lease_duration_s": lease_s(n)},
        action=LEASE_ACTION,
        evidence=tuple(n.evidence[k] for k in ("lease_expired_reads",) if k in n.evidence),
        variant="vllm-stale-block-lease",
        assumption=LEASE_ASSUMPTION,
    )


def _short(n: Node, slow: Node) -> AuditFinding:
    lease, took = lease_s(n), slow.slowest_transfer_s
    where = n.evidence.get("kv_lease_duration_s", "kv_lease_duration: default 30 s")
    return AuditFinding(
        id="lease-shorter-than-transfer",
        severity=Severity.MEDIUM,
        title=f"{n.name}: kv_lease_duration {lease:g} s but a NIXL transfer took over {took:g} s",
        nodes=(n.name, slow.name) if slow.name != n.name else (n.name,),
        numbers={"kv_lease_duration_s": lease, "slowest_transfer_s": took},
        action=LEASE_ACTION,
        evidence=(where, slow.evidence["slowest_transfer_s"]),
        variant="vllm-stale-block-lease",
        assumption=LEASE_ASSUMPTION,
    )


def evaluate(dep: Deployment) -> list[AuditFinding]:
    out = [_expired(n) for n in _vllm(dep) if n.lease_expired_reads > 0]
    timed = [n for n in _vllm(dep) if n.slowest_transfer_s is not None]
    for n in _vllm(dep):
        lease = lease_s(n)
        if n.role != "prefill" or lease is None or not timed:
            continue
        slow = max(timed, key=lambda m: m.slowest_transfer_s or 0.0)
        if lease < (slow.slowest_transfer_s or 0.0):
            out.append(_short(n, slow))
    push = [n for n in _vllm(dep) if transfer_mode(n) == "push"]
    if push:
        out.append(
            AuditFinding(
                id="nixl-push-mode",
                severity=Severity.INFO,
                title="NIXL push mode: " + ", ".join(n.name for n in push),
                nodes=tuple(n.name for n in push),
                numbers={n.name: n.kv_connector for n in push},
                action="In push mode a request whose prefill never reports keeps its decode "
                "blocks (#46283, open); watch decode's free blocks.",
                evidence=tuple(n.evidence["kv_connector"] for n in push),
            )
        )
    return out
