"""The single-node engine (no disaggregation): the end-to-end oracle.

Same model, same kernels, same chunked prefill, one pool, no transfer: the tokens it gives
for a prompt are the tokens a correct disaggregated engine must give. Independent of the
protocol model and of the handoff code, so it can judge both.
"""

from __future__ import annotations

import torch

from kvproof.refimpl.allocator import Allocator
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.pool import KVPool, PoolGeometry


class SingleNode:
    def __init__(
        self,
        model: Model,
        *,
        page_size: int,
        num_pages: int,
        chunk_size: int = 64,
        device: str = "cpu",
        seed: int = 0,
    ) -> None:
        spec = model.spec
        geom = PoolGeometry(spec.num_layers, num_pages, page_size, spec.num_kv_heads, spec.head_dim)
        self.model = model
        self.pool = KVPool(geom, device=device, seed=seed + 300)
        self.alloc = Allocator(range(num_pages))
        self.page_size = page_size
        self.chunk_size = chunk_size

    @torch.inference_mode()
    def generate(self, prompt: list[int] | tuple[int, ...], max_new_tokens: int) -> list[int]:
        prompt = list(prompt)
        n = len(prompt)
        pages = [self.alloc.alloc(0) for _ in range(-(-(n + max_new_tokens) // self.page_size))]
        try:
            logits = None
            for start in range(0, n, self.chunk_size):
                chunk = prompt[start : start + self.chunk_size]
                logits = self.model.extend(self.pool, chunk, start, pages, gen_index=0)
            assert logits is not None
            tokens = [int(logits.argmax())]
            while len(tokens) < max_new_tokens:
                pos = n + len(tokens) - 1
                out = self.model.decode(self.pool, tokens[-1], pos, pages, len(tokens))
                assert out is not None
                tokens.append(int(out.argmax()))
            return tokens
        finally:
            for page in pages:
                self.alloc.free(page)
