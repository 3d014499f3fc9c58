"""Extend/prefill: cached prefix + causal over new tokens, mixed with decode rows."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from paged_cases import TOLERANCES, build_case, extend_layout, random_queries

import kvproof.kernels.torch_paged as torch_paged
from kvproof.kernels import paged_decode, paged_extend


def _both(case, q, prefix, indptr):
    args = (q, case.kv_pool, case.page_table, prefix, indptr)
    return paged_extend(*args, backend="torch"), paged_extend(*args, backend="reference")


@pytest.mark.parametrize("page_size", [1, 5, 16, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mixed_batch(page_size: int, dtype: torch.dtype) -> None:
    """Decode rows (1 new token), a short extend, a long prefill from empty, and a
    sequence with no new tokens at all, in one batch."""
    prefixes, news = [40, 0, 7, 13, 25], [1, 90, 3, 0, 1]
    lens, prefix, indptr = extend_layout(prefixes, news)
    case = build_case(lens, page_size=page_size, dtype=dtype, seed=page_size)
    q = random_queries(int(indptr[-1]), 4, 16, dtype)
    fast, ref = _both(case, q, prefix, indptr)
    assert fast.shape == q.shape and fast.dtype == dtype
    assert not torch.isnan(fast).any()
    torch.testing.assert_close(fast, ref, **TOLERANCES[dtype])


def test_one_new_token_is_decode() -> None:
    lens, prefix, indptr = extend_layout([10, 0, 31], [1, 1, 1])
    case = build_case(lens, page_size=4)
    q = random_queries(3, 4, 16, torch.float32)
    ext = paged_extend(q, case.kv_pool, case.page_table, prefix, indptr, backend="torch")
    dec = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="torch")
    torch.testing.assert_close(ext, dec, atol=1e-6, rtol=1e-6)


def test_first_new_token_sees_only_prefix_and_itself() -> None:
    """Changing the K/V of a later new token must not change an earlier token's output."""
    lens, prefix, indptr = extend_layout([6], [5])
    case = build_case(lens, page_size=4, seed=2)
    q = random_queries(5, 2, 16, torch.float32)
    before = paged_extend(q, case.kv_pool, case.page_table, prefix, indptr, backend="torch")
    page = int(case.page_table[0, 10 // 4])
    case.kv_pool[:, page, 10 % 4] += 3.0  # the last new token (position 10)
    after = paged_extend(q, case.kv_pool, case.page_table, prefix, indptr, backend="torch")
    torch.testing.assert_close(before[:4], after[:4], atol=0, rtol=0)
    assert not torch.allclose(before[4], after[4])


def test_query_blocks_and_chunks_cross_the_diagonal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small chunks and score blocks: chunks that straddle the causal diagonal, rows that see
    nothing in a chunk (their max is -inf), and many query blocks."""
    lens, prefix, indptr = extend_layout([3, 0, 20], [60, 45, 17])
    case = build_case(lens, page_size=4, seed=7)
    q = random_queries(int(indptr[-1]), 4, 16, torch.float32) * 3
    monkeypatch.setattr(torch_paged, "CHUNK_BYTES", 3 * 4 * 2 * 16 * 4)
    monkeypatch.setattr(torch_paged, "SCORE_BYTES", 4 * 4 * 12 * 7)
    fast, ref = _both(case, q, prefix, indptr)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_shared_prefix_pages() -> None:
    lens, prefix, indptr = extend_layout([32, 32, 32], [1, 9, 4])
    case = build_case(lens, page_size=8, shared_pages=4, seed=5)
    q = random_queries(int(indptr[-1]), 4, 16, torch.float32)
    fast, ref = _both(case, q, prefix, indptr)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_page_ids_above_32768() -> None:
    lens, prefix, indptr = extend_layout([5, 2], [6, 3])
    case = build_case(lens, page_size=2, num_kv_heads=1, head_dim=8, first_page=33_000)
    q = random_queries(9, 2, 8, torch.float32)
    fast, ref = _both(case, q, prefix, indptr)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 30)), min_size=1, max_size=4),
    page_size=st.sampled_from([1, 4, 16]),
    group=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**16),
)
def test_random_extend_batches(rows, page_size, group, seed) -> None:
    prefixes = [p for p, _ in rows]
    news = [n if p + n else 1 for p, n in rows]  # keep every sequence non-empty
    lens, prefix, indptr = extend_layout(prefixes, news)
    case = build_case(lens, page_size=page_size, head_dim=8, seed=seed)
    q = random_queries(int(indptr[-1]), 2 * group, 8, torch.float32, seed=seed + 1)
    fast, ref = _both(case, q, prefix, indptr)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
