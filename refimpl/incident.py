"""The incident, replayed on the reference engine (the library behind ``kvproof demo``).

Two tenants send prompts holding canary strings; then tenant A sends a prompt longer than
prefill's pool but within the advertised context. The deployment is the incident's,
scaled down with the same ratio (prefill pool ~65% of the context, ``sglang-0.5.19-pd``'s
``engine_sizes``); the variant says which engine version serves it. On 0.5.19 the long
request is prefilled as a 1-token placeholder, decode attends over its full reservation,
and the echo model reads tenant B's canary back out of the stale pages, with HTTP 200.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.oracle import Answer, leak_check
from kvproof.spec.variant import Sizes, Variant, load_variant

INCIDENT_VARIANT = "sglang-0.5.19-pd"
CANARIES = {"A": "CANARY-A-7Q2X9K", "B": "CANARY-B-5M8R3T"}
PROMPT_A = f"tenant-a confidential: {CANARIES['A']} account 4417-0092, do not share."
PROMPT_B = f"tenant-b private memo :: {CANARIES['B']} :: wire 88,000 to acct 3391 today."
LONG_HEAD = "tenant-a: summarise this quarterly report. "
LOREM = "lorem ipsum dolor sit amet, consectetur adipiscing elit. "


@dataclass(frozen=True)
class Row:
    rid: int
    tenant: str
    prompt_tokens: int
    status: int | str | None
    text: str
    reason: str
    finding: Answer | None


@dataclass(frozen=True)
class IncidentReport:
    variant: str
    deployment_from: str
    sizes: Sizes
    prefill_max_input: int
    decode_max_input: int
    danger_window: tuple[int, int] | None  # prompt lengths prefill rejects, decode admits
    rows: tuple[Row, ...]

    @property
    def leaks(self) -> tuple[Answer, ...]:
        """200s carrying another tenant's canary."""
        return tuple(r.finding for r in self.rows if r.finding is not None and r.finding.leak)

    @property
    def wrong(self) -> tuple[Answer, ...]:
        """200s unlike the single node's answer (leaks included)."""
        return tuple(r.finding for r in self.rows if r.finding is not None and r.finding.wrong)

    @property
    def stale_reads(self) -> int:
        return sum(len(r.finding.stale_pages) for r in self.rows if r.finding is not None)

    @property
    def exit_code(self) -> int:
        return 1 if self.wrong else 0


def _pad(text: str, length: int) -> str:
    return (text + " " * length)[:length]


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def run_incident(
    variant: Variant,
    *,
    sizes: Sizes | None = None,
    model: str = "echo",
    device: str = "cpu",
    seed: int = 0,
) -> IncidentReport:
    deployment_from = "variant" if sizes is not None else INCIDENT_VARIANT
    sizes = sizes or load_variant(INCIDENT_VARIANT).engine_sizes
    cluster = Cluster(variant, sizes=sizes, model=model, device=device, seed=seed)
    p_lim, d_lim = cluster.limits
    ps = sizes.page_size
    # Page-aligned canary prompts, B's at least as long as A's: B's pages then overwrite
    # every byte of A's on both nodes, and whatever the long request reads is B's.
    len_a = _round_up(len(PROMPT_A), ps)
    len_b = max(len_a, _round_up(len(PROMPT_B), ps))
    cluster.submit("A", _pad(PROMPT_A, len_a), 16)
    cluster.run()
    cluster.submit("B", _pad(PROMPT_B, len_b), 16)
    cluster.run()
    top = min(d_lim.max_req_input_len, sizes.context_len - 1)
    low = p_lim.max_req_input_len + 1
    window = (low, top) if low <= top else None
    long_len = (low + top) // 2 if window else top
    long_prompt = (LONG_HEAD + LOREM * (long_len // len(LOREM) + 1))[:long_len]
    cluster.submit("A", long_prompt, 48)
    cluster.run()
    findings = {f.rid: f for f in leak_check(cluster, CANARIES)}
    rows = tuple(
        Row(
            req.rid,
            req.tenant,
            len(req.prompt),
            cluster.response(req.rid).status,
            cluster.response(req.rid).text,
            req.reason,
            findings.get(req.rid),
        )
        for req in cluster.requests
    )
    return IncidentReport(
        variant.name,
        deployment_from,
        sizes,
        p_lim.max_req_input_len,
        d_lim.max_req_input_len,
        window,
        rows,
    )
