"""The probe's vocabulary: one request's observation, one finding, the whole report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One request as the client saw it."""

    tenant: str  # "A" (plants canaries) or "B" (probes); never the API key
    purpose: str  # calibrate | canary | search | ttft | repeat | over_context
    prompt_chars: int
    prompt_tokens: int | None  # the server's usage.prompt_tokens
    status: int
    text: str
    ttft_s: float  # time to the first token (the whole answer when not streamed)


@dataclass(frozen=True)
class ProbeFinding:
    kind: str  # foreign_canary | accepted_over_context | non_monotone | fast_ttft | inconsistent
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fit:
    intercept_s: float
    slope_s_per_token: float
    resid_s: float
    points: int


@dataclass(frozen=True)
class ProbeReport:
    url: str
    model: str
    context: int
    context_from: str  # "/v1/models" or "--context"
    chars_per_token: float
    boundary_tokens: int | None  # the longest prompt the endpoint accepted
    fit: Fit | None
    samples: tuple[Sample, ...]
    findings: tuple[ProbeFinding, ...]
    requests: int
    seconds: float
    stopped_by_budget: str | None  # "requests" / "seconds" when the budget ran out

    @property
    def verdict(self) -> str:
        """``finding``; ``inconclusive`` when the budget ran out before the probe's plan was
        done (a leak may sit past where it stopped: never shown as clean); else ``clean``."""
        if self.findings:
            return "finding"
        return "inconclusive" if self.stopped_by_budget else "clean"

    @property
    def exit_code(self) -> int:
        # Only a finished probe without findings is clean (exit 0); see checker/cli/exits.py.
        return 0 if self.verdict == "clean" else 1

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (keys listed in ``render.py``)."""
        return {
            "url": self.url,
            "model": self.model,
            "context": self.context,
            "context_from": self.context_from,
            "chars_per_token": round(self.chars_per_token, 3),
            "boundary_tokens": self.boundary_tokens,
            "fit": dataclasses.asdict(self.fit) if self.fit else None,
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "stopped_by_budget": self.stopped_by_budget,
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "samples": [dataclasses.asdict(s) for s in self.samples],
            "verdict": self.verdict,
            "exit_code": self.exit_code,
        }
