"""The LEAK oracle: independent of the protocol model and of the handoff code.

A response is a leak when its text contains another tenant's canary, or its tokens differ
from the single-node engine's tokens for the same prompt. The report says which pages were
stale and whose bytes they held, from the run's ground truth (``Cluster.truth``, the
recorder the engine writes and never reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.recorder import PageRead
from kvproof.refimpl.single_node import SingleNode


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
class AnswerFinding:
    rid: int
    tenant: str
    status: int | str | None
    text: str
    foreign_canaries: tuple[str, ...]  # tenants whose canary the response contains
    tokens_match: bool  # same tokens as the single-node engine
    stale_pages: tuple[StalePage, ...]

    @property
    def leak(self) -> bool:
        """Another tenant's canary is in the response: the only thing called a leak."""
        return bool(self.foreign_canaries)

    @property
    def wrong(self) -> bool:
        """The 200 is not what a single node answers: a leak, or other tokens (e.g. the
        request's own KV read at the wrong position)."""
        return self.leak or not self.tokens_match


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


def leak_check(
    cluster: Cluster,
    canaries: Mapping[str, str] | None = None,
    reference: Reference | None = None,
) -> list[AnswerFinding]:
    """One finding per request the client got a 200 for."""
    canaries = canaries or {}
    reference = reference or reference_engine(cluster)
    out = []
    for req in cluster.requests:
        resp = cluster.response(req.rid)
        if resp.status != 200:
            continue
        foreign = tuple(t for t, c in canaries.items() if t != req.tenant and c in resp.text)
        expected = reference.generate(req.prompt, req.max_new_tokens)[: len(resp.tokens)]
        out.append(
            AnswerFinding(
                req.rid,
                req.tenant,
                resp.status,
                resp.text,
                foreign,
                list(resp.tokens) == expected,
                stale_pages(cluster, req.rid),
            )
        )
    return out
