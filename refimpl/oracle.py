"""The LEAK oracle: independent of the protocol model and of the handoff code.

A response is a leak when its text contains another tenant's canary, or its tokens differ
from the single-node engine's tokens for the same prompt. The report says which pages were
stale and whose bytes they held, from the run's ground truth (``Cluster.truth``, the
recorder the engine writes and never reads). ``answers`` is what every client got, whatever
its status, each 200 generated once by the single node; ``leak_check`` is its 200s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.recorder import PageRead
from kvproof.refimpl.single_node import SingleNode
from kvproof.refimpl.tokenizer import render


@dataclass(frozen=True)
class StalePage:
    index: int  # position in the reader's page table
    page: int
    writer: int | None  # request whose KV the page held (None: never written in this run)
    writer_tenant: str | None
    filled: bool
    valid: int  # slots holding the writer's real tokens
    read: int  # slots the reader used as its prompt

    def describe(self) -> str:
        if self.writer is None:
            who = "bytes from before this run (no request here wrote them)"
        else:
            who = f"KV of tenant {self.writer_tenant} (request {self.writer})"
        if self.filled and self.valid < self.read:
            return f"{self.read - self.valid} of {self.read} slots are prefill's leftovers"
        return who + ("" if self.filled else ", not written since allocation")


@dataclass(frozen=True)
class Answer:
    """What one client got, whatever the status, next to the single node's answer."""

    rid: int  # the engine's request id
    request: int  # the client's number counted from ``answers``' offset (a trace's r0, r1, ...)
    tenant: str
    status: int | str | None  # 200 / 400 / 500 / "aborted"; None: no answer yet
    text: str
    reason: str  # the engine's internal reason (never shown to the client)
    single_node: str  # the single-node engine's text for the same prompt ("" when not 200)
    tokens_match: bool  # same tokens as the single-node engine (True when not 200)
    canaries: tuple[tuple[str, str], ...]  # (tenant, canary) the text contains
    stale_pages: tuple[StalePage, ...]

    @property
    def foreign_canaries(self) -> tuple[str, ...]:
        """Tenants other than the request's whose canary the response contains."""
        return tuple(t for t, _ in self.canaries if t != self.tenant)

    @property
    def leak(self) -> bool:
        """Another tenant's canary is in the response: the only thing called a leak."""
        return bool(self.foreign_canaries)

    @property
    def wrong(self) -> bool:
        """The 200 is not what a single node answers: a leak, or other tokens (e.g. the
        request's own KV read at the wrong position)."""
        return self.leak or not self.tokens_match

    def to_json(self) -> dict[str, Any]:
        """A row of ``kvproof replay --json``'s ``responses`` and of the HTML report."""
        keys = ("request", "tenant", "status", "text", "reason", "single_node", "tokens_match")
        row = {k: getattr(self, k) for k in keys}
        return row | {
            "canaries": [list(c) for c in self.canaries],
            "foreign": list(self.foreign_canaries),
        }


class Reference(Protocol):
    """What answers a prompt as the single node does (a ``SingleNode``, or one that
    remembers its answers: ``checker/conformance/fuzz.py``)."""

    def generate(self, prompt: list[int] | tuple[int, ...], max_new_tokens: int) -> list[int]: ...


def reference_engine(cluster: Cluster, max_new_tokens: int = 256) -> SingleNode:
    """A single node with the cluster's model, big enough for any admitted prompt."""
    ps = cluster.sizes.page_size
    pages = -(-(cluster.sizes.context_len + max_new_tokens) // ps) + 1
    return SingleNode(
        cluster.model,
        page_size=ps,
        num_pages=pages,
        chunk_size=cluster.chunk_size,
        device=cluster.device,
        seed=cluster.seed,
    )


def stale_pages(cluster: Cluster, rid: int) -> tuple[StalePage, ...]:
    def tenant(w: int | None) -> str | None:
        return None if w is None else cluster.requests[w].tenant

    def one(r: PageRead) -> StalePage:
        return StalePage(r.index, r.page, r.writer, tenant(r.writer), r.filled, r.valid, r.read)

    return tuple(one(r) for r in cluster.truth.reads_of(rid))


def answers(
    cluster: Cluster,
    canaries: Mapping[str, str] | None = None,
    reference: Reference | None = None,
    offset: int = 0,
) -> list[Answer]:
    """One answer per request from ``offset`` on (a replay's warm-up request is not the
    trace's), each prompt the client got a 200 for generated once by ``reference``."""
    canaries = canaries or {}
    reference = reference or reference_engine(cluster)
    out = []
    for req in cluster.requests[offset:]:
        resp = cluster.response(req.rid)
        found = tuple((t, c) for t, c in canaries.items() if c in resp.text)
        single, match = "", True
        if resp.status == 200:
            expected = reference.generate(req.prompt, req.max_new_tokens)[: len(resp.tokens)]
            single, match = render(expected), list(resp.tokens) == list(expected)
        out.append(
            Answer(
                req.rid,
                req.rid - offset,
                req.tenant,
                resp.status,
                resp.text,
                resp.reason,
                single,
                match,
                found,
                stale_pages(cluster, req.rid),
            )
        )
    return out


def leak_check(
    cluster: Cluster,
    canaries: Mapping[str, str] | None = None,
    reference: Reference | None = None,
) -> list[Answer]:
    """One finding per request the client got a 200 for."""
    return [a for a in answers(cluster, canaries, reference) if a.status == 200]
