"""What the engine needs from a model: its KV geometry and two paged forward passes.

Both tiny models run one sequence per call (the engine's events are per request), write
their new tokens' KV into the pool with ``write_kv`` and read it back with the paged kernels:
the same kernels, on whatever pages the caller's table names, stale or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from kvproof.refimpl.pool import KVPool


@dataclass(frozen=True)
class ModelSpec:
    name: str
    num_layers: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int


@dataclass(frozen=True)
class Guard:
    """Owner-tag check for a guarded decode read: every page must carry ``expected``."""

    page_tags: torch.Tensor  # int64 [num_pages]
    expected: int
    # ``expected`` as an int64 [1] tensor on the pool's device, if the caller keeps one.
    expected_tensor: torch.Tensor | None = None

    def expected_tags(self, device: torch.device) -> torch.Tensor:
        if self.expected_tensor is not None:
            return self.expected_tensor
        return torch.tensor([self.expected], dtype=torch.int64, device=device)


class Model(Protocol):
    spec: ModelSpec

    def extend(
        self, pool: KVPool, tokens: list[int], start: int, pages: list[int], gen_index: int
    ) -> torch.Tensor:
        """Write the KV of ``tokens`` at positions ``start..`` and return the last logits."""
        ...

    def decode(
        self,
        pool: KVPool,
        token: int,
        pos: int,
        pages: list[int],
        gen_index: int,
        guard: Guard | None = None,
    ) -> torch.Tensor | None:
        """One decode step at ``pos``; ``None`` when the guard refused to read a page."""
        ...


def slot_mapping(pages: list[int], start: int, count: int, page_size: int) -> list[int]:
    """Physical slot (page * page_size + offset) of positions ``start .. start+count-1``."""
    return [pages[p // page_size] * page_size + p % page_size for p in range(start, start + count)]


def table_of(pages: list[int], device: torch.device) -> torch.Tensor:
    return torch.tensor([pages], dtype=torch.int32, device=device)
