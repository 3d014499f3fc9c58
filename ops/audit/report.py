"""``audit()``: files in, ``AuditReport`` out; and the report's stable JSON form.

JSON schema ``kvproof.audit/1``: see ``to_dict``. Field names only ever get added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kvproof.ops.audit.admission import input_limit
from kvproof.ops.audit.danger import Danger, dangers
from kvproof.ops.audit.deployment import Deployment, Node, from_files, load_deployment
from kvproof.ops.audit.findings import AuditFinding, Severity, evaluate
from kvproof.ops.audit.redact import scrub_all
from kvproof.ops.audit.vllm_rules import lease_s, transfer_mode
from kvproof.ops.audit.window import Window
from kvproof.spec.errors import KvproofInputError

SCHEMA = "kvproof.audit/1"


@dataclass(frozen=True)
class AuditReport:
    deployment: Deployment
    findings: tuple[AuditFinding, ...]
    dangers: tuple[Danger, ...]

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def exit_code(self, fail_on: Severity | None) -> int:
        """1 if a finding is at or above ``fail_on`` (None: never fail), else 0."""
        if fail_on is None:
            return 0
        return int(any(f.severity >= fail_on for f in self.findings))

    def recommendations(self) -> list[str]:
        """Each distinct action once, most severe first."""
        seen: dict[str, None] = {}
        for f in self.findings:
            seen.setdefault(f.action)
        return list(seen)

    def to_dict(self, fail_on: Severity | None = Severity.LOW) -> dict[str, Any]:
        return scrub_all(self._dict(fail_on))

    def _dict(self, fail_on: Severity | None) -> dict[str, Any]:
        dep = self.deployment
        return {
            "schema": SCHEMA,
            "deployment": {
                "name": dep.name,
                "advertised_context": dep.advertised_context,
                "advertised_from": dep.advertised_from,
            },
            "nodes": [
                {
                    "name": n.name,
                    "role": n.role,
                    "engine": n.engine,
                    "version": n.version,
                    "pool_tokens": n.pool_tokens,
                    "context_len": n.context_len,
                    "page_size": n.page_size,
                    "max_input_tokens": input_limit(n, "engine"),
                    "deferred_release": n.deferred_release,
                    "transfer_checksum": n.transfer_checksum,
                    **_settings(n),
                    "sources": [
                        {"path": p, "format": f} for p, f in zip(n.sources, n.formats, strict=True)
                    ],
                    "evidence": dict(n.evidence),
                }
                for n in dep.nodes
            ],
            "windows": [_danger(d) for d in self.dangers],
            "findings": [
                {
                    "id": f.id,
                    "severity": str(f.severity),
                    "title": f.title,
                    "nodes": list(f.nodes),
                    "numbers": dict(f.numbers),
                    "action": f.action,
                    "evidence": list(f.evidence),
                    "variant": f.variant,
                    "assumption": f.assumption,
                }
                for f in self.findings
            ],
            "recommendations": self.recommendations(),
            "worst_severity": str(self.worst) if self.worst is not None else None,
            "fail_on": str(fail_on) if fail_on is not None else "never",
            "exit_code": self.exit_code(fail_on),
        }


def _settings(n: Node) -> dict[str, Any]:
    """Fields added to schema 1 for the PD settings (None: unknown or not this engine)."""
    return {
        "transfer_backend": n.transfer_backend,
        "decode_radix_cache": n.decode_radix_cache,
        "reserved_decode_tokens": n.reserved_decode_tokens,
        "release_timeout_s": n.release_timeout_s,
        "waiting_timeout_s": n.waiting_timeout_s,
        "bootstrap_timeout_s": n.bootstrap_timeout_s,
        "heartbeat_interval_s": n.heartbeat_interval_s,
        "heartbeat_max_failure": n.heartbeat_max_failure,
        "env_exposed": n.env_exposed,
        "slowest_transfer_s": n.slowest_transfer_s,
        "kv_connector": n.kv_connector,
        "transfer_mode": transfer_mode(n),
        "kv_lease_duration_s": lease_s(n),
        "lease_expired_reads": n.lease_expired_reads,
    }


def _window(w: Window | None) -> dict[str, int] | None:
    if w is None:
        return None
    out = asdict(w)
    del out["prefill"], out["decode"], out["view"]
    return {**out, "lengths": w.lengths}


def _danger(d: Danger) -> dict[str, Any]:
    return {
        "prefill": d.prefill,
        "decode": d.decode,
        "pool": _window(d.pool),
        "engine": _window(d.engine),
        "variant": d.match.variant if d.match else None,
        "fixed_variant": d.match.fixed if d.match else None,
        "leaks": d.match.leaks if d.match else None,
        "version_assumed": d.match.assumed if d.match else None,
        "what_happens": d.what_happens,
    }


def build_deployment(
    paths: Sequence[str], roles: Mapping[str, str] | None = None, context: int | None = None
) -> Deployment:
    """A deployment TOML (one, alone) or node files, one node each."""
    tomls = [p for p in paths if p.endswith(".toml")]
    if tomls and len(paths) > 1:
        raise KvproofInputError("give one deployment TOML alone, or node files", tomls[0])
    if context is not None and context <= 0:
        raise KvproofInputError("must be a positive number of tokens", "--context")
    if tomls:
        return load_deployment(tomls[0], roles, context)
    return from_files(paths, roles, context)


def audit(
    paths: Sequence[str], roles: Mapping[str, str] | None = None, context: int | None = None
) -> AuditReport:
    """The whole audit as a library call (the CLI renders what this returns)."""
    deployment = build_deployment(paths, roles, context)
    found = dangers(deployment)
    return AuditReport(deployment, tuple(evaluate(deployment, found)), tuple(found))
