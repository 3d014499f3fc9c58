"""A tiny random-weight decoder for numeric comparisons: 2 layers, GQA (4 q / 2 kv heads).

Llama-shaped (RMSNorm, RoPE, SwiGLU), weights drawn from a seed, fp32, a few milliseconds
per step on CPU. Its tokens mean nothing; what matters is that any stale or foreign KV
changes them, so "same tokens as the single-node engine" is a sharp test.
"""

from __future__ import annotations

import math

import torch

from kvproof.kernels import paged_decode, paged_decode_guarded, paged_extend, write_kv
from kvproof.refimpl.model_base import Guard, ModelSpec, slot_mapping, table_of
from kvproof.refimpl.pool import KVPool
from kvproof.refimpl.tokenizer import VOCAB_SIZE

D_MODEL = 64
D_FF = 128
ROPE_BASE = 10000.0


def _rms(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class TinyModel:
    def __init__(self, *, seed: int = 0, device: str = "cpu") -> None:
        self.spec = ModelSpec("tiny", 2, 4, 2, 16, VOCAB_SIZE)
        self.device = torch.device(device)
        gen = torch.Generator().manual_seed(seed)
        s = self.spec

        def w(rows: int, cols: int) -> torch.Tensor:
            return (torch.randn(rows, cols, generator=gen) / math.sqrt(rows)).to(device)

        self.embed = torch.randn(VOCAB_SIZE, D_MODEL, generator=gen).to(device)
        self.layers = [
            {
                "wq": w(D_MODEL, s.num_q_heads * s.head_dim),
                "wk": w(D_MODEL, s.num_kv_heads * s.head_dim),
                "wv": w(D_MODEL, s.num_kv_heads * s.head_dim),
                "wo": w(s.num_q_heads * s.head_dim, D_MODEL),
                "w1": w(D_MODEL, D_FF),
                "w3": w(D_MODEL, D_FF),
                "w2": w(D_FF, D_MODEL),
            }
            for _ in range(s.num_layers)
        ]
        self.lm_head = w(D_MODEL, VOCAB_SIZE)
        half = s.head_dim // 2
        self.inv_freq = 1.0 / ROPE_BASE ** (torch.arange(half, dtype=torch.float64) / half)

    def _rope(self, x: torch.Tensor, positions: list[int]) -> torch.Tensor:
        ang = torch.tensor(positions, dtype=torch.float64)[:, None] * self.inv_freq[None, :]
        cos = ang.cos().float().to(self.device)[:, None, :]
        sin = ang.sin().float().to(self.device)[:, None, :]
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def _run(
        self,
        pool: KVPool,
        tokens: list[int],
        start: int,
        pages: list[int],
        guard: Guard | None,
        decode_step: bool,
    ) -> torch.Tensor | None:
        s = self.spec
        n = len(tokens)
        positions = list(range(start, start + n))
        slots = torch.tensor(slot_mapping(pages, start, n, pool.page_size), device=self.device)
        table = table_of(pages, self.device)
        h = self.embed[torch.tensor(tokens, device=self.device)]
        for i, lw in enumerate(self.layers):
            x = _rms(h)
            q = self._rope((x @ lw["wq"]).view(n, s.num_q_heads, s.head_dim), positions)
            k = self._rope((x @ lw["wk"]).view(n, s.num_kv_heads, s.head_dim), positions)
            v = (x @ lw["wv"]).view(n, s.num_kv_heads, s.head_dim)
            kv = pool.layer(i)
            write_kv(kv, k, v, slots)
            if not decode_step:
                attn = paged_extend(
                    q,
                    kv,
                    table,
                    torch.tensor([start], dtype=torch.int32, device=self.device),
                    torch.tensor([0, n], dtype=torch.int32, device=self.device),
                )
            else:
                lens = torch.tensor([start + 1], dtype=torch.int32, device=self.device)
                # Tags cannot change between layers of one step: check them once, before
                # the first read of the cache (layer 0), as Cloudflare's prototype did.
                if guard is None or i > 0:
                    attn = paged_decode(q, kv, table, lens)
                else:
                    expected = guard.expected_tags(self.device)
                    attn, err = paged_decode_guarded(q, kv, table, lens, guard.page_tags, expected)
                    if bool(err[0]):
                        return None
            h = h + attn.reshape(n, -1) @ lw["wo"]
            x = _rms(h)
            h = h + (torch.nn.functional.silu(x @ lw["w1"]) * (x @ lw["w3"])) @ lw["w2"]
        return _rms(h[-1]) @ self.lm_head

    def extend(
        self, pool: KVPool, tokens: list[int], start: int, pages: list[int], gen_index: int
    ) -> torch.Tensor:
        out = self._run(pool, tokens, start, pages, None, decode_step=False)
        assert out is not None
        return out

    def decode(
        self,
        pool: KVPool,
        token: int,
        pos: int,
        pages: list[int],
        gen_index: int,
        guard: Guard | None = None,
    ) -> torch.Tensor | None:
        return self._run(pool, [token], pos, pages, guard, decode_step=True)
