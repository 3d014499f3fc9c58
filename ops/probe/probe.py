"""The probe: canaries from tenant A, prompts from tenant B around the acceptance boundary.

1. ``/v1/models`` (or ``--context``) gives the advertised context; one short request
   calibrates characters per token from ``usage.prompt_tokens``.
2. Tenant A plants its canary (one per run) before each of B's prompts, so the most
   recently freed KV pages hold A's canary whenever B's prompt is served (engines hand out
   the most recently freed pages first); the same canary every time keeps stale copies at
   the same positions alike, so a leaking answer reads it whole.
3. B binary-searches the longest accepted prompt up to the advertised context, sends a
   prompt over the context (must be 400), samples time to first token across the accepted
   lengths and repeats identical prompts.
4. Findings: A's canary in B's answers; 200 for a prompt over the context, or accepted
   above a length that was rejected; answers faster than their prefill (``fit.py``);
   different answers to the same prompt at temperature 0.

Bounded: every request spends one unit of a ``Budget`` of requests and seconds.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from kvproof.ops.probe.client import OpenAIClient
from kvproof.ops.probe.findings import ProbeFinding, ProbeReport, Sample
from kvproof.ops.probe.fit import fit_ttft, too_fast
from kvproof.spec.errors import KvproofInputError

FILLER = "probe filler: the quick brown fox jumps over the lazy dog. "
CALIBRATE_CHARS = 64
CANARY_TOKENS = 96
MAX_TOKENS = 48
TTFT_POINTS = 8


class BudgetSpent(Exception):
    pass


@dataclass
class Budget:
    requests: int = 120
    seconds: float = 90.0
    used: int = 0
    started: float = field(default_factory=time.monotonic)
    spent_on: str | None = None

    def take(self) -> None:
        if self.used >= self.requests:
            self.spent_on = "requests"
        elif time.monotonic() - self.started > self.seconds:
            self.spent_on = "seconds"
        if self.spent_on:
            raise BudgetSpent(self.spent_on)
        self.used += 1


def _canary() -> str:
    return "KVP" + secrets.token_hex(4).upper()


class _Probe:
    def __init__(
        self, client: OpenAIClient, keys: tuple[str, str], model: str, budget: Budget
    ) -> None:
        self.client, self.keys, self.model, self.budget = client, keys, model, budget
        self.samples: list[Sample] = []
        self.canaries: list[str] = [_canary()]
        self.cpt = 1.0  # characters per token

    def send(self, tenant: str, prompt: str, purpose: str) -> Sample:
        self.budget.take()
        key = self.keys[0] if tenant == "A" else self.keys[1]
        s = self.client.complete(key, self.model, prompt, MAX_TOKENS, tenant, purpose)
        if s.prompt_tokens is None and s.status == 200:
            s = Sample(
                s.tenant,
                s.purpose,
                s.prompt_chars,
                round(s.prompt_chars / self.cpt),
                s.status,
                s.text,
                s.ttft_s,
            )
        self.samples.append(s)
        return s

    def plant(self) -> None:
        canary = self.canaries[0]
        unit = f"<{canary}> "
        chars = int(CANARY_TOKENS * self.cpt)
        self.send("A", (unit * (chars // len(unit) + 1))[:chars], "canary")

    def probe(self, tokens: int, purpose: str) -> Sample:
        """A canary from A, then B's prompt of about ``tokens`` tokens."""
        self.plant()
        chars = max(1, int(tokens * self.cpt))
        return self.send("B", (FILLER * (chars // len(FILLER) + 1))[:chars], purpose)

    def calibrate(self) -> None:
        s = self.send("B", (FILLER * 2)[:CALIBRATE_CHARS], "calibrate")
        if s.status != 200:
            raise KvproofInputError(
                f"a {CALIBRATE_CHARS}-character prompt was answered {s.status}: "
                "check --api-key/--second-key and the URL",
                self.client.url,
            )
        if s.prompt_tokens:
            self.cpt = CALIBRATE_CHARS / s.prompt_tokens

    def search(self, context: int) -> int | None:
        """The longest accepted prompt (tokens), by bisection between 64 and the context."""
        lo, hi = CALIBRATE_CHARS, context + 16
        over = self.probe(hi, "over_context")
        if over.status == 200:
            return None  # accepted past the context: no boundary below it to search
        while hi - lo > max(1, context // 512):
            mid = (lo + hi) // 2
            if self.probe(mid, "search").status == 200:
                lo = mid
            else:
                hi = mid
        return lo


def _accepted(samples: list[Sample]) -> list[Sample]:
    """B's answered prompts, less the calibration request (it also warms the server up)."""
    return [
        s
        for s in samples
        if s.tenant == "B" and s.status == 200 and s.prompt_tokens and s.purpose != "calibrate"
    ]


def _findings(p: _Probe, context: int) -> list[ProbeFinding]:
    out: list[ProbeFinding] = []
    for s in p.samples:
        if s.tenant != "B" or s.status != 200:
            continue
        seen = [c for c in p.canaries if c in s.text or c[3:] in s.text]
        if seen:
            out.append(
                ProbeFinding(
                    "foreign_canary",
                    f"tenant B's {s.prompt_tokens}-token prompt got tenant A's canary {seen[0]}",
                    {"canaries": seen, "prompt_tokens": s.prompt_tokens, "text": s.text},
                )
            )
    accepted = _accepted(p.samples)
    rejected = [s for s in p.samples if s.tenant == "B" and s.status == 400]
    for s in accepted:
        if s.purpose == "over_context" or (s.prompt_tokens or 0) > context:
            out.append(
                ProbeFinding(
                    "accepted_over_context",
                    f"200 for a {s.prompt_tokens}-token prompt, over the advertised "
                    f"context {context}",
                    {"prompt_tokens": s.prompt_tokens},
                )
            )
    if rejected:
        shortest = min(s.prompt_chars for s in rejected)
        longer = [s for s in accepted if s.prompt_chars > shortest]
        if longer:
            out.append(
                ProbeFinding(
                    "non_monotone",
                    f"{len(longer)} prompts accepted although a shorter one ({shortest} chars) "
                    "was rejected",
                    {"accepted_chars": sorted(s.prompt_chars for s in longer)},
                )
            )
    fit = fit_ttft(accepted)
    if fit is not None:
        for s in accepted:
            predicted = too_fast(fit, s)
            if predicted is not None:
                out.append(
                    ProbeFinding(
                        "fast_ttft",
                        f"{s.prompt_tokens}-token prompt answered 200 after "
                        f"{1000 * s.ttft_s:.1f} ms, a full prefill takes "
                        f"~{1000 * predicted:.1f} ms: not prefilled "
                        "(an internal reject answered 200?)",
                        {
                            "prompt_tokens": s.prompt_tokens,
                            "ttft_s": s.ttft_s,
                            "predicted_s": predicted,
                        },
                    )
                )
    by_prompt: dict[int, set[str]] = {}  # B's prompt is a function of its length
    for s in accepted:
        by_prompt.setdefault(s.prompt_chars, set()).add(s.text)
    for chars, texts in sorted(by_prompt.items()):
        if len(texts) > 1:
            out.append(
                ProbeFinding(
                    "inconsistent",
                    f"the same {chars}-character prompt got {len(texts)} different answers "
                    "at temperature 0",
                    {"prompt_chars": chars, "answers": sorted(texts)},
                )
            )
    return out


def run_probe(
    url: str,
    *,
    api_key: str = "kvproof-probe-tenant-a",
    second_key: str = "kvproof-probe-tenant-b",
    context: int | None = None,
    budget: Budget | None = None,
    timeout_s: float = 30.0,
) -> ProbeReport:
    budget = budget or Budget()
    client = OpenAIClient(url, timeout_s=timeout_s)
    t0 = time.monotonic()
    try:
        model, advertised = client.models(api_key)
        if context is None and advertised is None:
            raise KvproofInputError("no context length in /v1/models: pass --context", url)
        ctx = context if context is not None else advertised
        assert ctx is not None
        p = _Probe(client, (api_key, second_key), model, budget)
        boundary = None
        try:
            p.calibrate()
            boundary = p.search(ctx)
            top = boundary if boundary is not None else ctx
            for i in range(TTFT_POINTS):
                p.probe(CALIBRATE_CHARS + (top - CALIBRATE_CHARS) * i // (TTFT_POINTS - 1), "ttft")
            for length in (top, (CALIBRATE_CHARS + top) // 2):
                for _ in range(2):
                    p.probe(length, "repeat")
        except BudgetSpent:
            pass
    finally:
        client.close()
    accepted = _accepted(p.samples)
    return ProbeReport(
        url=client.url,
        model=model,
        context=ctx,
        context_from="--context" if context is not None else "/v1/models",
        chars_per_token=p.cpt,
        boundary_tokens=boundary,
        fit=fit_ttft(accepted),
        samples=tuple(p.samples),
        findings=tuple(_findings(p, ctx)),
        requests=budget.used,
        seconds=time.monotonic() - t0,
        stopped_by_budget=budget.spent_on,
    )
