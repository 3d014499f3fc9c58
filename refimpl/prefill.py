"""The prefill node (P): its own admission, chunked prefill into its own pool, status, abort.

P validates the prompt against its own limits. Over the limit it marks a pending reject
(``to_finish = FINISH_ABORT(400)``); SGLang #30233 then replaced the prompt by a 1-token
placeholder and carried on, which is why the incident's prefill wrote one page. The
sender's state (destination indices, posted pages) is kept per request in ``PrefillReq``.

Owner tags: decode gives its reservation's tag with the destination indices (``send``); P
stamps it on the pages it computes, in its own pool's tag array, and every transfer carries
the source page's tag with its bytes. Nothing here reads the run's ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kvproof.refimpl.allocator import Allocator
from kvproof.refimpl.limits import Limits
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.pool import KVPool, PoolGeometry
from kvproof.refimpl.recorder import Recorder
from kvproof.refimpl.tags import NO_TAG


@dataclass
class PrefillReq:
    rid: int
    tokens: list[int]  # what P runs: the prompt, or the placeholder
    phase: str = "idle"  # idle | waiting | active | sent | stopped (spec/handoff.md)
    pend: bool = False  # a pending abort (req.to_finish)
    src_ok: bool = False  # P's blocks still hold this request's KV (pull: lease not expired)
    # P's own pages in position order (vLLM's remote_block_ids): kept after release, because
    # a reader holding the ids can still read them once they belong to someone else (#52234).
    pages: list[int] = field(default_factory=list)
    held: bool = False  # P still owns ``pages``
    computed: bool = False
    first_token: int | None = None
    checksum: tuple[int, ...] = ()
    dst: list[int] = field(default_factory=list)  # destination pages it was given (push)
    tag: int = NO_TAG  # the owner tag decode gave with the destination indices
    posted: set[int] = field(default_factory=set)  # destination pages posted so far
    # The prefill serving it died (``crash``, E20): it posts, reports, processes ABORTs and
    # ACKs nothing more. Only a liveness lasso's replay performs it (never a walk or a run).
    dead: bool = False


class PrefillNode:
    def __init__(
        self,
        model: Model,
        *,
        num_pages: int,
        page_size: int,
        limits: Limits,
        device: str,
        seed: int,
        debug: bool,
        chunk_size: int,
        record: Recorder,
        checksum: bool = True,
    ) -> None:
        spec = model.spec
        geom = PoolGeometry(spec.num_layers, num_pages, page_size, spec.num_kv_heads, spec.head_dim)
        self.model = model
        self.pool = KVPool(geom, device=device, seed=seed, checksum=checksum)
        self.alloc = Allocator(range(num_pages), debug=debug)
        self.limits = limits
        self.page_size = page_size
        self.chunk_size = chunk_size
        self.checksum = checksum  # only senders whose decode checks it (transfer_checksum)
        self.record = record

    def pages_for(self, req: PrefillReq) -> int:
        return -(-len(req.tokens) // self.page_size)

    def can_compute(self, req: PrefillReq) -> bool:
        return req.computed or self.alloc.free_count >= self.pages_for(req)

    @torch.inference_mode()
    def compute(self, req: PrefillReq) -> None:
        """Chunked prefill into P's own pages; the last logits give the first token."""
        if req.computed:
            return
        req.pages = [self.alloc.alloc(req.rid) for _ in range(self.pages_for(req))]
        logits = None
        for start in range(0, len(req.tokens), self.chunk_size):
            chunk = req.tokens[start : start + self.chunk_size]
            logits = self.model.extend(self.pool, chunk, start, req.pages, gen_index=0)
        assert logits is not None
        req.first_token = int(logits.argmax())
        self.stamp(req)
        ps = self.page_size
        for i, page in enumerate(req.pages):
            self.record.computed(page, req.rid, min(ps, len(req.tokens) - i * ps))
        if self.checksum:  # SGLang #39500: over the sent pages, sent in the aux row
            req.checksum = self.pool.checksum(req.pages)
        req.computed = True
        req.held = True

    def stamp(self, req: PrefillReq) -> None:
        """The owner tag of the KV just computed, on its pages (travels with the bytes)."""
        for page in req.pages:
            self.pool.tags.stamp_tag(page, req.tag)

    def release(self, req: PrefillReq, *, reused: bool = False) -> None:
        """Free P's pages. ``reused``: other traffic overwrites them at once (lease expiry)."""
        if not req.held:
            return
        for page in req.pages:
            self.alloc.free(page)
            if reused:
                self.pool.scribble(page)
                self.record.reused(page, self.page_size)
        req.held = False
