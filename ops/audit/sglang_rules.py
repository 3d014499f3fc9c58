"""SGLang PD settings against the assumptions the fixed model's proof rests on.

Each rule names the catalog variant whose counterexample shows the cost, and the
assumption of ``sglang-0.5.22-pd`` that the setting breaks:

- ``checksum-one-sided`` (critical): ``disaggregation_enable_kv_checksum`` on one role only.
  The digest travels from prefill; decode compares only when it received one ("returning
  None is always safe: this side simply ships no digest", disaggregation/kv_checksum.py),
  so one side alone checks nothing. ``transfer-checksum-disabled`` (low): off on both.
  Variant ``sglang-pd-checksum-decode-only`` when decode is the side that has it; no
  assumption: which roles check is the model's switch ``transfer_checksum`` (issue 12: the
  one-sided checksum is a switch value), not an environment assumption of a proof.
- ``deferred-release-disabled`` (high): ``SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE``
  off on a role, or unknown where the version's default is off (#35049: env-gated, off).
  Unknown where the version's default is on (v0.5.21+, ``spec/releases.toml``) is info.
  Variant ``sglang-pd-early-free-abort``; no
  assumption: that variant differs from ``sglang-0.5.22-pd`` by its ``release`` switch
  (immediate), and ``sglang-0.5.22-pd`` assumes only ``bounded_transfer``.
- ``transfer-backend-no-deferred-ack`` (high): MORI before v0.5.22 sends no drain ACK
  (#37454 implements it for mooncake, nixl and ascend; MORI needs v0.5.22 per the press
  reports, docs/upstream.md#press-reports).
- ``release-timeout-short`` (high when a transfer in the metrics took longer, medium when
  shorter than ``SGLANG_DISAGGREGATION_WAITING_TIMEOUT``): decode frees a held room's pages
  on ACK *or* after the release timeout; a write still in flight then lands in reused
  pages. Variant ``sglang-pd-deferred-timeout``, assumption ``bounded_transfer``.
- ``decode-radix-cache`` (medium): ``disaggregation_decode_enable_radix_cache`` shares
  prefix pages between requests on decode (#38319/#38355). Variant
  ``sglang-pd-decode-radix-race`` (the race is its bug: no assumption).
"""

from __future__ import annotations

from kvproof.ops.audit import catalog, release, sglang_env
from kvproof.ops.audit.deployment import Deployment, Node
from kvproof.ops.audit.finding import AuditFinding, Severity

EXPOSE_HOW = (
    f"Expose it: start the servers with {sglang_env.EXPOSE}=1 (then /server_info lists "
    "internal_states[].env_vars), or add the launch script or pod spec to the node's files."
)
CHECKSUM_FLAG = "--disaggregation-enable-kv-checksum"
CHECKSUM_DECODE_ONLY = "sglang-pd-checksum-decode-only"


def _pd(dep: Deployment, role: str | None = None) -> list[Node]:
    roles = (role,) if role else ("prefill", "decode")
    return [n for n in dep.nodes if n.engine == "sglang" and n.role in roles]


def _names(nodes: list[Node]) -> str:
    return ", ".join(n.name for n in nodes)


def _ev(nodes: list[Node], key: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.evidence[key] for n in nodes if key in n.evidence))


def _checksum(dep: Deployment) -> list[AuditFinding]:
    out = []
    for p in _pd(dep, "prefill"):
        for d in _pd(dep, "decode"):
            sides = {p.name: p.transfer_checksum, d.name: d.transfer_checksum}
            if True not in sides.values() or all(sides.values()):
                continue
            on = [n for n in (p, d) if n.transfer_checksum]
            off = [n for n in (p, d) if not n.transfer_checksum]
            known = all(n.transfer_checksum is not None for n in off)
            out.append(
                AuditFinding(
                    id="checksum-one-sided",
                    severity=Severity.CRITICAL if known else Severity.MEDIUM,
                    title=f"disaggregation_enable_kv_checksum on {_names(on)} but "
                    f"{'off' if known else 'unknown'} on {_names(off)}: the pair "
                    f"{p.name} -> {d.name} checks nothing",
                    nodes=(p.name, d.name),
                    numbers=sides,
                    action=f"Start both prefill and decode with {CHECKSUM_FLAG} (server arg "
                    "disaggregation_enable_kv_checksum, #39500): decode compares only a "
                    "digest prefill sent, so one side alone checks nothing.",
                    evidence=_ev([p, d], "transfer_checksum"),
                    # transfer_checksum = "decode_only"; prefill only has no catalog variant.
                    variant=CHECKSUM_DECODE_ONLY if d.transfer_checksum else None,
                    assumption=None,  # a switch of the model, not an assumption
                )
            )
    nodes = _pd(dep)
    if not out and nodes and not any(n.transfer_checksum for n in nodes):
        out.append(
            AuditFinding(
                id="transfer-checksum-disabled",
                severity=Severity.LOW,
                title=f"per-transfer KV checksum off: {_names(nodes)}",
                nodes=tuple(n.name for n in nodes),
                numbers={n.name: n.transfer_checksum for n in nodes},
                action=f"Start prefill and decode with {CHECKSUM_FLAG} (#39500) to detect a "
                "handoff whose pages were overwritten.",
                evidence=_ev(nodes, "transfer_checksum"),
                variant=None,
                assumption=None,  # transfer_checksum = "off": a switch, not an assumption
            )
        )
    return out


DEFERRED_ACTION = (
    f"Set {sglang_env.DEFERRED}=1 in the environment of both prefill and decode "
    f"(`{sglang_env.DEFERRED}=1 python -m sglang.launch_server ...`): decode then holds an "
    "aborted request's pages until every prefill rank ACKs that its writes drained "
    f"(#35049; on by default from v{sglang_env.DEFERRED_DEFAULT_ON})."
)


def _deferred_finding(
    nodes: list[Node], severity: Severity, title: str, extra: str
) -> AuditFinding:
    return AuditFinding(
        id="deferred-release-disabled",
        severity=severity,
        title=title + _names(nodes),
        nodes=tuple(n.name for n in nodes),
        numbers={n.name: n.deferred_release for n in nodes},
        action=DEFERRED_ACTION + extra,
        evidence=_ev(nodes, "deferred_release"),
        variant="sglang-pd-early-free-abort",
        assumption=None,  # release = "immediate": a switch of the model, not an assumption
    )


def _default_on(n: Node) -> bool:
    return release.default("deferred_release", n.version) is True


def _deferred(dep: Deployment) -> list[AuditFinding]:
    off = [n for n in _pd(dep) if n.deferred_release is False]
    unknown = [n for n in _pd(dep) if n.deferred_release is None]
    risky = [n for n in unknown if not _default_on(n)]
    assumed = [n for n in unknown if _default_on(n)]
    out = []
    if off:
        out.append(_deferred_finding(off, Severity.HIGH, "deferred KV release off: ", ""))
    if risky:
        title = "deferred KV release unknown (default off on this version): "
        out.append(_deferred_finding(risky, Severity.HIGH, title, " " + EXPOSE_HOW))
    if assumed:
        title = (
            "deferred KV release not exposed "
            f"(default on from v{sglang_env.DEFERRED_DEFAULT_ON} assumed): "
        )
        out.append(_deferred_finding(assumed, Severity.INFO, title, " " + EXPOSE_HOW))
    return out


def _backend(dep: Deployment) -> list[AuditFinding]:
    nodes = [
        n
        for n in _pd(dep)
        if n.transfer_backend == "mori"
        and (release.parse_version(n.version) or (0, 0, 0)) < catalog.FIXED_SGLANG
    ]
    if not nodes:
        return []
    return [
        AuditFinding(
            id="transfer-backend-no-deferred-ack",
            severity=Severity.HIGH,
            title=f"transfer backend mori before v0.5.22 sends no drain ACK: {_names(nodes)}",
            nodes=tuple(n.name for n in nodes),
            numbers={n.name: n.version for n in nodes},
            action="Run v0.5.22 or later for MORI, or start both roles with "
            "--disaggregation-transfer-backend mooncake (or nixl): deferred release waits for "
            "an ACK only those backends send (#37454).",
            evidence=_ev(nodes, "transfer_backend"),
            variant="sglang-pd-early-free-abort",
            assumption=None,  # no drain ACK: the release switch, as above
        )
    ]


def _timeout(dep: Deployment) -> list[AuditFinding]:
    out = []
    for d in _pd(dep, "decode"):
        release, waiting = d.release_timeout_s, d.waiting_timeout_s
        if d.deferred_release is False or release is None:
            continue
        peers = [d, *_pd(dep, "prefill")]
        seen = [(n.slowest_transfer_s, n) for n in peers if n.slowest_transfer_s is not None]
        slowest = max(seen, key=lambda x: x[0]) if seen else None
        slow = slowest is not None and release < slowest[0]
        short = waiting is not None and release < waiting
        if not (slow or short):
            continue
        need = max(x for x in (waiting, slowest[0] if slowest else None) if x is not None)
        assumed = "assumed" in d.evidence.get("release_timeout_s", "")
        why = (
            f"a transfer took over {slowest[0]:g} s"
            if slow and slowest
            else f"the waiting timeout is {waiting:g} s"
        )
        evidence = _ev([d], "release_timeout_s") + _ev([d], "waiting_timeout_s")
        if slow and slowest:
            evidence += _ev([slowest[1]], "slowest_transfer_s")
        out.append(
            AuditFinding(
                id="release-timeout-short",
                severity=Severity.HIGH if slow else Severity.MEDIUM,
                title=f"{d.name}: deferred-release timeout {release:g} s"
                f"{' (default, not exposed)' if assumed else ''} but {why}",
                nodes=(d.name,),
                numbers={
                    "release_timeout_s": release,
                    "waiting_timeout_s": waiting,
                    "slowest_transfer_s": slowest[0] if slowest else None,
                },
                action=f"Set {sglang_env.DEFERRED_TIMEOUT}={need:g} (or more) on decode, or "
                f"lower {sglang_env.WAITING_TIMEOUT}: decode frees a held room's pages when "
                "this timeout fires, ACK or not, and a write still in flight lands in reused "
                "pages. A longer timeout narrows the window but does not close it.",
                evidence=evidence,
                variant="sglang-pd-deferred-timeout",
                assumption="bounded_transfer",
            )
        )
    return out


def _radix(dep: Deployment) -> list[AuditFinding]:
    nodes = [n for n in _pd(dep, "decode") if n.decode_radix_cache]
    if not nodes:
        return []
    return [
        AuditFinding(
            id="decode-radix-cache",
            severity=Severity.MEDIUM,
            title=f"radix cache on decode (shared prefix pages): {_names(nodes)}",
            nodes=tuple(n.name for n in nodes),
            numbers={n.name: True for n in nodes},
            action="Start decode without --disaggregation-decode-enable-radix-cache: a page "
            "shared by several requests is freed and reused by one of them while another "
            "still reads it (#38319/#38355).",
            evidence=_ev(nodes, "decode_radix_cache"),
            variant="sglang-pd-decode-radix-race",
            assumption=None,  # the race is this variant's bug (now modelled), no assumption
        )
    ]


def evaluate(dep: Deployment) -> list[AuditFinding]:
    return _checksum(dep) + _deferred(dep) + _backend(dep) + _timeout(dep) + _radix(dep)
