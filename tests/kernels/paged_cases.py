"""Builders of paged-attention test problems, shared by the pytest modules and the
Triton interpreter script (which runs in a subprocess and imports this file by path).

Every slot that no sequence owns (the tail of a last page, pages nobody uses) holds NaN, so
a kernel that reads past ``seq_len`` or multiplies a masked score by an unmasked V shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvproof.kernels import make_tag

TOLERANCES: dict[torch.dtype, dict[str, float]] = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
    torch.float16: {"atol": 1e-3, "rtol": 1e-3},
    torch.bfloat16: {"atol": 1.5e-2, "rtol": 1e-2},
}


@dataclass(frozen=True)
class PagedCase:
    """A pool, the tables that index it, and who owns which page."""

    kv_pool: torch.Tensor  # [2, P, page_size, H_kv, D]; unowned slots are NaN
    page_table: torch.Tensor  # int32 [num_seqs, max_pages], -1 padded
    kv_lens: torch.Tensor  # int32 [num_seqs]
    page_tags: torch.Tensor  # int64 [P]
    expected_tags: torch.Tensor  # int64 [num_seqs]

    @property
    def page_size(self) -> int:
        return self.kv_pool.shape[2]


def build_case(
    kv_lens: list[int],
    *,
    page_size: int,
    num_kv_heads: int = 2,
    head_dim: int = 16,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    spare_pages: int = 3,
    first_page: int = 0,
    shared_pages: int = 0,
    extra_columns: int = 1,
) -> PagedCase:
    """Sequences of ``kv_lens`` tokens on shuffled pages drawn from ``[first_page, P)``.

    ``shared_pages``: sequences 1.. reuse sequence 0's first pages (prefix caching), so one
    physical page appears in several tables. ``first_page`` above 32,768 checks int64 math.
    """
    gen = torch.Generator().manual_seed(seed)
    needed = [(n + page_size - 1) // page_size for n in kv_lens]
    own = [max(0, k - (shared_pages if s else 0)) for s, k in enumerate(needed)]
    num_pages = first_page + sum(own) + spare_pages
    ids = first_page + torch.randperm(num_pages - first_page, generator=gen)
    pool = torch.full((2, num_pages, page_size, num_kv_heads, head_dim), float("nan"), dtype=dtype)
    width = max(needed, default=0) + extra_columns
    table = torch.full((len(kv_lens), width), -1, dtype=torch.int32)
    tags = torch.full((num_pages,), -7, dtype=torch.int64)  # -7: nobody's tag
    expected = torch.tensor([make_tag(1000 + s, 3) for s in range(len(kv_lens))])
    cursor = 0
    for s, k in enumerate(needed):
        shared = min(shared_pages, k) if s else 0
        mine = ids[cursor : cursor + k - shared]
        cursor += k - shared
        table[s, :k] = torch.cat([table[0, :shared], mine.to(torch.int32)])
        tags[mine] = expected[s]
    if shared_pages:
        assert kv_lens[0] >= shared_pages * page_size, "shared pages must be full in seq 0"
    for s, n in enumerate(kv_lens):
        start = min(n, shared_pages * page_size) if s else 0  # shared tokens: seq 0 wrote them
        t = torch.arange(start, n)
        pages = table[s, t // page_size].to(torch.int64)
        values = torch.randn(2, n - start, num_kv_heads, head_dim, generator=gen)
        pool[:, pages, t % page_size] = values.to(dtype)
    return PagedCase(pool, table, torch.tensor(kv_lens, dtype=torch.int32), tags, expected)


def random_queries(
    num_tokens: int, num_q_heads: int, head_dim: int, dtype: torch.dtype, seed: int = 1
) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(num_tokens, num_q_heads, head_dim, generator=gen).to(dtype)


def extend_layout(
    prefix_lens: list[int], new_lens: list[int]
) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """``(kv_lens, prefix_lens int32, q_indptr int32)`` for an extend batch."""
    kv_lens = [p + n for p, n in zip(prefix_lens, new_lens, strict=True)]
    indptr = torch.zeros(len(new_lens) + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(new_lens, dtype=torch.int32), 0)
    return kv_lens, torch.tensor(prefix_lens, dtype=torch.int32), indptr


def tamper(case: PagedCase, victim: int, donor: int, column: int = 0) -> PagedCase:
    """Point ``victim``'s table entry ``column`` at ``donor``'s first page (a stale table
    naming a page that now belongs to someone else)."""
    table = case.page_table.clone()
    table[victim, column] = case.page_table[donor, 0]
    return PagedCase(case.kv_pool, table, case.kv_lens, case.page_tags, case.expected_tags)
