"""What each client of a replayed trace got, next to the single-node engine's answer.

Plain data for reports (``kvproof report``): one row per model request, whatever its
status (a 400 or an abort is as telling as a 200), with the canaries its text contains.
The single-node answer is what the same prompt gives with no disaggregation and no
handoff (``refimpl/oracle.py``): what the client should have got.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.oracle import Reference, reference_engine
from kvproof.refimpl.tokenizer import render


@dataclass(frozen=True)
class ClientResponse:
    request: int  # the model's request number (r0, r1, ...)
    tenant: str
    status: int | str | None  # 200 / 400 / 500 / "aborted"; None: no answer yet
    text: str
    reason: str  # the engine's internal reason (never shown to the client)
    single_node: str  # the single-node engine's text for the same prompt ("" when not 200)
    tokens_match: bool
    canaries: tuple[tuple[str, str], ...]  # (tenant, canary) the text contains
    foreign: tuple[str, ...]  # tenants other than the request's whose canary it contains

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "tenant": self.tenant,
            "status": self.status,
            "text": self.text,
            "reason": self.reason,
            "single_node": self.single_node,
            "tokens_match": self.tokens_match,
            "canaries": [list(c) for c in self.canaries],
            "foreign": list(self.foreign),
        }


def client_responses(
    cluster: Cluster, canaries: Mapping[str, str], offset: int, reference: Reference | None = None
) -> list[ClientResponse]:
    """One row per request from ``offset`` on (the warm-up tenant's request is not the
    trace's)."""
    reference = reference or reference_engine(cluster)
    out = []
    for req in cluster.requests[offset:]:
        resp = cluster.response(req.rid)
        found = tuple((t, c) for t, c in canaries.items() if c in resp.text)
        single = ""
        match = True
        if resp.status == 200:
            expected = reference.generate(req.prompt, req.max_new_tokens)[: len(resp.tokens)]
            single = render(expected)
            match = list(resp.tokens) == list(expected)
        out.append(
            ClientResponse(
                req.rid - offset,
                req.tenant,
                resp.status,
                resp.text,
                resp.reason,
                single,
                match,
                found,
                tuple(t for t, _ in found if t != req.tenant),
            )
        )
    return out
