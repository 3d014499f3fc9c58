"""The echo model: constructed weights whose greedy decode reads back the text in its KV.

One layer, one head, head_dim 128. The key of position ``j`` is a positional code
``[cos(j w), sin(j w)]`` (64 random frequencies, so no two positions below 4,096 look alike);
the value is the token's embedding. The query of the ``i``-th generated token is the code
of position ``i``: greedy decode answers the text stored at positions 0, 1, 2, ... of the
pages it attends to. On its own pages that is its own prompt; on stale pages it is whatever
another request left there at those positions, which is what makes a leak readable.
(A trained model would learn such a copy head; constructing it keeps the demo exact.)
"""

from __future__ import annotations

import math

import torch

from kvproof.kernels import paged_decode, paged_decode_guarded, paged_extend, write_kv
from kvproof.refimpl.model_base import Guard, ModelSpec, slot_mapping, table_of
from kvproof.refimpl.pool import KVPool
from kvproof.refimpl.tokenizer import VOCAB_SIZE

HEAD_DIM = 128
SHARPNESS = 2.0  # match scores 128 vs <= 84 for any other position: softmax is one-hot


class EchoModel:
    def __init__(self, *, seed: int = 0, device: str = "cpu") -> None:
        self.spec = ModelSpec("echo", 1, 1, 1, HEAD_DIM, VOCAB_SIZE)
        gen = torch.Generator().manual_seed(seed)
        half = HEAD_DIM // 2
        self.freqs = torch.rand(half, generator=gen, dtype=torch.float64) * (math.pi - 0.3) + 0.3
        emb = torch.randn(VOCAB_SIZE, HEAD_DIM, generator=gen) / math.sqrt(HEAD_DIM)
        self.embed = emb.to(device)
        self.device = torch.device(device)

    def _code(self, positions: list[int]) -> torch.Tensor:
        pos = torch.tensor(positions, dtype=torch.float64)[:, None] * self.freqs[None, :]
        return torch.cat([pos.cos(), pos.sin()], dim=1).float().to(self.device)

    def _write(self, pool: KVPool, tokens: list[int], start: int, pages: list[int]) -> None:
        n = len(tokens)
        k = self._code(list(range(start, start + n)))[:, None, :]
        v = self.embed[torch.tensor(tokens, device=self.device)][:, None, :]
        slots = torch.tensor(slot_mapping(pages, start, n, pool.page_size), device=self.device)
        write_kv(pool.layer(0), k, v, slots)

    def _query(self, gen_index: int, n: int) -> torch.Tensor:
        return (SHARPNESS * self._code([gen_index])).expand(n, HEAD_DIM)[:, None, :].contiguous()

    def extend(
        self, pool: KVPool, tokens: list[int], start: int, pages: list[int], gen_index: int
    ) -> torch.Tensor:
        self._write(pool, tokens, start, pages)
        n = len(tokens)
        out = paged_extend(
            self._query(gen_index, n),
            pool.layer(0),
            table_of(pages, self.device),
            torch.tensor([start], dtype=torch.int32, device=self.device),
            torch.tensor([0, n], dtype=torch.int32, device=self.device),
            scale=1.0,
        )
        return out[-1, 0] @ self.embed.T

    def decode(
        self,
        pool: KVPool,
        token: int,
        pos: int,
        pages: list[int],
        gen_index: int,
        guard: Guard | None = None,
    ) -> torch.Tensor | None:
        self._write(pool, [token], pos, pages)
        table = table_of(pages, self.device)
        lens = torch.tensor([pos + 1], dtype=torch.int32, device=self.device)
        q = self._query(gen_index, 1)
        if guard is None:
            out = paged_decode(q, pool.layer(0), table, lens, scale=1.0)
        else:
            expected = guard.expected_tags(self.device)
            out, err = paged_decode_guarded(
                q, pool.layer(0), table, lens, guard.page_tags, expected, scale=1.0
            )
            if bool(err[0]):
                return None
        return out[0, 0] @ self.embed.T
