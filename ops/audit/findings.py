"""The audit's rules: each finding has a severity, the numbers, and what to do.

Rules (id: severity):

- ``prefill-rejects-decode-admits``: critical when the nodes' release leaks in that window
  (the incident's exact precondition, SGLang #30233), medium when the release rejects
  cleanly, low when prefill's limit is smaller but the API never sends such prompts.
- ``pool-below-context``: high on a prefill node, medium elsewhere.
- ``sglang-pd-version``: SGLang in PD mode below v0.5.21 (high: no #38935), v0.5.21
  (low: v0.5.22 recommended) or of unknown version (medium).
- ``page-size-mismatch``: high. ``context-mismatch``: medium (paired nodes).
- SGLang PD settings (checksum, deferred release, release timeout, backend, decode radix
  cache): ``sglang_rules``. vLLM NIXL lease: ``vllm_rules``.
"""

from __future__ import annotations

from kvproof.ops.audit import catalog, release, sglang_rules, vllm_rules
from kvproof.ops.audit.admission import input_limit
from kvproof.ops.audit.danger import Danger
from kvproof.ops.audit.deployment import Deployment, Node
from kvproof.ops.audit.finding import AuditFinding, Severity

__all__ = ["AuditFinding", "Severity", "evaluate"]


def _pool_below_context(dep: Deployment) -> list[AuditFinding]:
    out = []
    for n in dep.nodes:
        if n.pool_tokens >= dep.advertised_context:
            continue
        limit = input_limit(n, "engine")  # what this node admits today
        out.append(
            AuditFinding(
                id="pool-below-context",
                severity=Severity.HIGH if n.role == "prefill" else Severity.MEDIUM,
                title=f"{n.name} ({n.role}): KV pool {n.pool_tokens:,} < advertised context "
                f"{dep.advertised_context:,}",
                nodes=(n.name,),
                numbers={
                    "pool_tokens": n.pool_tokens,
                    "advertised_context": dep.advertised_context,
                    "shortfall_tokens": dep.advertised_context - n.pool_tokens,
                },
                action=f"Raise {n.name}'s KV pool to at least {dep.advertised_context:,} tokens "
                "(the incident's fix used ~2x the context, 2.04M) with mem_fraction_static, more "
                f"GPUs or an FP8 KV cache, or advertise at most {limit:,} tokens; "
                "re-measure after any change of weights, quantization, parallelism or "
                "memory fraction.",
                evidence=(n.evidence["pool_tokens"], dep.advertised_from),
            )
        )
    return out


def _window(dep: Deployment, d: Danger) -> AuditFinding:
    w, e, m = d.headline, d.engine, d.match
    # The safe API cap is the tighter of the two views: with SGLang's margins, prompts of
    # pool-5..pool tokens are already rejected by prefill and admitted by decode.
    cap = min(x.prefill_limit for x in (d.pool, d.engine) if x is not None)
    if m is not None and m.leaks:
        severity = Severity.CRITICAL
        action = (
            "Run SGLang v0.5.22 or later on both roles (pending rejects retired at the "
            "disaggregation queue, #38935/#38704) and raise the prefill pool to cover "
            f"{dep.advertised_context:,} tokens; until then cap the API's context at "
            f"{cap:,} tokens."
        )
    else:
        severity = Severity.MEDIUM
        action = (
            f"Prompts of {w.lo:,}..{w.hi:,} tokens are advertised but fail: raise "
            f"{d.prefill}'s pool and context to the advertised context, or advertise at "
            f"most {w.prefill_limit:,} tokens."
        )
    version_note = " (version unknown: assumed vulnerable)" if m is not None and m.assumed else ""
    return AuditFinding(
        id="prefill-rejects-decode-admits",
        severity=severity,
        title=f"prefill {d.prefill} rejects prompts that decode {d.decode} admits: "
        f"{w.lo:,}..{w.hi:,} tokens{version_note}",
        nodes=(d.prefill, d.decode),
        numbers={
            "advertised_context": dep.advertised_context,
            "window_lo": w.lo,
            "window_hi": w.hi,
            "window_lengths": w.lengths,
            "prefill_limit": w.prefill_limit,
            "decode_limit": w.decode_limit,
            "safe_api_context": cap,
            "engine_window_lo": e.lo if e else None,
            "engine_window_hi": e.hi if e else None,
            "variant": m.variant if m else None,
            "fixed_variant": m.fixed if m else None,
        },
        action=action,
        evidence=tuple(dict.fromkeys((*d.evidence, dep.advertised_from))),
        variant=m.variant if m else None,
    )


def _limit_known(n: Node) -> bool:
    # A pool alone (vLLM /metrics) bounds what a node admits but is not its limit.
    return n.context_len is not None or n.max_req_input_len is not None


def _latent(dep: Deployment, dangers: list[Danger]) -> list[AuditFinding]:
    """prefill's limit below decode's, though the advertised context hides it for now."""
    out = []
    exposed = {(d.prefill, d.decode) for d in dangers}
    for p in dep.with_role("prefill"):
        for d in dep.with_role("decode"):
            lp, ld = input_limit(p, "engine"), input_limit(d, "engine")
            if (p.name, d.name) in exposed or lp >= ld or not (_limit_known(p) and _limit_known(d)):
                continue
            out.append(
                AuditFinding(
                    id="prefill-rejects-decode-admits",
                    severity=Severity.LOW,
                    title=f"prefill {p.name} admits up to {lp:,} tokens, decode {d.name} {ld:,}; "
                    "the advertised context stays below both",
                    nodes=(p.name, d.name),
                    numbers={
                        "prefill_limit": lp,
                        "decode_limit": ld,
                        "advertised_context": dep.advertised_context,
                    },
                    action="Keep the advertised context at or below the prefill limit, or size "
                    "prefill's pool like decode's before raising it.",
                )
            )
    return out


def _pd_nodes(dep: Deployment) -> list[Node]:
    return [n for n in dep.nodes if n.role in ("prefill", "decode")]


# SGLang #38935 (retire pending rejects at the disaggregation queue) is in the wheels from
# v0.5.21 (catalog.ADMISSION_FIX, from spec/releases.toml), and the incident report
# recommends v0.5.22 or later (docs/upstream.md#press-reports).
PROMPT_FIX_SGLANG = catalog.ADMISSION_FIX["sglang"]
VERSION_ACTION = (
    "Run SGLang v0.5.22 or later on every prefill and decode node (admission fixes "
    "#38935/#38704/#36988, abort acks #38961, deferred KV release on by default)."
)


def _version_finding(nodes: list[Node], severity: Severity, title: str, extra: str) -> AuditFinding:
    return AuditFinding(
        id="sglang-pd-version",
        severity=severity,
        title=title + ", ".join(f"{n.name} {n.version or '?'}" for n in nodes),
        nodes=tuple(n.name for n in nodes),
        numbers={n.name: n.version for n in nodes},
        action=VERSION_ACTION + extra,
        evidence=tuple(n.evidence["version"] for n in nodes if "version" in n.evidence),
        variant="sglang-0.5.19-pd",
    )


def _version(dep: Deployment) -> list[AuditFinding]:
    old, partial, unknown = [], [], []
    for n in _pd_nodes(dep):
        if n.engine != "sglang":
            continue
        parsed = release.parse_version(n.version)
        if parsed is None:
            unknown.append(n)
        elif parsed < PROMPT_FIX_SGLANG:
            old.append(n)
        elif parsed < catalog.FIXED_SGLANG:
            partial.append(n)
    out = []
    if old:
        title = "SGLang in PD mode without the prompt-path fix (#38935, v0.5.21): "
        out.append(_version_finding(old, Severity.HIGH, title, ""))
    if partial:
        title = "SGLang in PD mode below the recommended v0.5.22: "
        out.append(_version_finding(partial, Severity.LOW, title, ""))
    if unknown:
        title = "SGLang in PD mode, version not in the data: "
        extra = " Add /server_info (it has 'version') or 'version' in the TOML."
        out.append(_version_finding(unknown, Severity.MEDIUM, title, extra))
    return out


def _pairs(dep: Deployment) -> list[AuditFinding]:
    out = []
    for p in dep.with_role("prefill"):
        for d in dep.with_role("decode"):
            if p.page_size and d.page_size and p.page_size != d.page_size:
                out.append(
                    AuditFinding(
                        id="page-size-mismatch",
                        severity=Severity.HIGH,
                        title=f"page size {p.page_size} on {p.name} but {d.page_size} on {d.name}",
                        nodes=(p.name, d.name),
                        numbers={"prefill_page_size": p.page_size, "decode_page_size": d.page_size},
                        action="Use one page_size on both roles: decode reserves ceil(L/page) "
                        "pages and prefill writes its own count into them.",
                        evidence=(p.evidence["page_size"], d.evidence["page_size"]),
                    )
                )
            if p.context_len and d.context_len and p.context_len != d.context_len:
                out.append(
                    AuditFinding(
                        id="context-mismatch",
                        severity=Severity.MEDIUM,
                        title=f"context {p.context_len:,} on {p.name} but {d.context_len:,} on "
                        f"{d.name}",
                        nodes=(p.name, d.name),
                        numbers={"prefill_context": p.context_len, "decode_context": d.context_len},
                        action="Start prefill and decode with the same context length: each side "
                        "validates the prompt against its own limits.",
                        evidence=(p.evidence["context_len"], d.evidence["context_len"]),
                    )
                )
    return out


def evaluate(dep: Deployment, dangers: list[Danger]) -> list[AuditFinding]:
    """Every finding, most severe first (stable within a severity)."""
    found = [_window(dep, d) for d in dangers]
    found += _latent(dep, dangers) + _pool_below_context(dep) + _version(dep)
    found += sglang_rules.evaluate(dep) + vllm_rules.evaluate(dep) + _pairs(dep)
    return sorted(found, key=lambda f: -f.severity)
