"""Decode: the torch path agrees with the oracle, and the oracle with contiguous SDPA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from paged_cases import TOLERANCES, build_case, random_queries

import kvproof.kernels.torch_paged as torch_paged
from kvproof.kernels import paged_decode
from kvproof.kernels.reference import gather_tokens


def _both(case, q):
    args = (q, case.kv_pool, case.page_table, case.kv_lens)
    return paged_decode(*args, backend="torch"), paged_decode(*args, backend="reference")


@pytest.mark.parametrize("page_size", [1, 5, 16, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_torch_matches_reference(page_size: int, dtype: torch.dtype) -> None:
    lens = [1, page_size, page_size + 1, 3 * page_size - 1, 70]
    case = build_case(lens, page_size=page_size, num_kv_heads=2, head_dim=16, dtype=dtype)
    q = random_queries(len(lens), 8, 16, dtype)  # GQA: 4 query heads per KV head
    fast, ref = _both(case, q)
    assert fast.dtype == dtype and fast.shape == q.shape
    assert not torch.isnan(fast).any()
    torch.testing.assert_close(fast, ref, **TOLERANCES[dtype])


def test_reference_matches_contiguous_sdpa() -> None:
    """The oracle itself: same answer as SDPA over the K/V laid out contiguously."""
    case = build_case([37, 5, 64], page_size=8, num_kv_heads=2, head_dim=16)
    q = random_queries(3, 6, 16, torch.float32)
    ref = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="reference")
    for s, n in enumerate(case.kv_lens.tolist()):
        kv = gather_tokens(case.kv_pool, case.page_table[s], n)  # [2, n, H, D]
        k, v = kv[0].transpose(0, 1)[None], kv[1].transpose(0, 1)[None]
        sdpa = F.scaled_dot_product_attention(q[s][None, :, None], k, v, enable_gqa=True)
        torch.testing.assert_close(ref[s], sdpa[0, :, 0], atol=1e-5, rtol=1e-5)


def test_shared_shuffled_pages() -> None:
    """Prefix caching: several tables name the same physical pages, in shuffled order."""
    case = build_case([48, 40, 33, 64], page_size=8, shared_pages=4, seed=3)
    assert (case.page_table[1:, :4] == case.page_table[0, :4]).all()
    q = random_queries(4, 4, 16, torch.float32)
    fast, ref = _both(case, q)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_page_ids_above_32768() -> None:
    case = build_case([9, 30], page_size=4, num_kv_heads=1, head_dim=8, first_page=40_000)
    assert int(case.page_table.max()) > 32_768
    q = random_queries(2, 2, 8, torch.float32)
    fast, ref = _both(case, q)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_chunked_online_softmax(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny chunks force the running (max, sum, acc) combine across many chunks."""
    case = build_case([1, 50, 101], page_size=5, seed=4)
    q = random_queries(3, 4, 16, torch.float32) * 4  # peaky softmax: the max shift matters
    page_bytes = 5 * 2 * 16 * 4
    monkeypatch.setattr(torch_paged, "CHUNK_BYTES", 3 * page_bytes)
    fast, ref = _both(case, q)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_scale_argument() -> None:
    case = build_case([20], page_size=4)
    q = random_queries(1, 2, 16, torch.float32)
    args = (q, case.kv_pool, case.page_table, case.kv_lens)
    a = paged_decode(*args, scale=0.05, backend="torch")
    b = paged_decode(*args, scale=0.05, backend="reference")
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(a, paged_decode(*args, backend="torch"))


def test_auto_is_torch_on_cpu() -> None:
    case = build_case([12, 3], page_size=4)
    q = random_queries(2, 2, 16, torch.float32)
    args = (q, case.kv_pool, case.page_table, case.kv_lens)
    assert torch.equal(paged_decode(*args), paged_decode(*args, backend="torch"))


@settings(max_examples=25, deadline=None)
@given(
    lens=st.lists(st.integers(1, 90), min_size=1, max_size=5),
    page_size=st.sampled_from([1, 3, 8, 16]),
    kv_heads=st.sampled_from([1, 2]),
    group=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_random_batches(lens, page_size, kv_heads, group, seed) -> None:
    case = build_case(lens, page_size=page_size, num_kv_heads=kv_heads, head_dim=8, seed=seed)
    q = random_queries(len(lens), kv_heads * group, 8, torch.float32, seed=seed + 1)
    fast, ref = _both(case, q)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_pool_view_whose_k_and_v_halves_do_not_stack() -> None:
    """A pool that is a page-range view of a bigger pool (K and V halves not adjacent)."""
    case = build_case([21, 9], page_size=4, seed=11)
    bigger = torch.full((2, case.kv_pool.shape[1] + 5, *case.kv_pool.shape[2:]), float("nan"))
    bigger[:, : case.kv_pool.shape[1]] = case.kv_pool
    view = bigger[:, : case.kv_pool.shape[1]]
    assert view.stride(0) != view.shape[1] * view.stride(1)
    q = random_queries(2, 4, 16, torch.float32)
    fast = paged_decode(q, view, case.page_table, case.kv_lens, backend="torch")
    ref = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="reference")
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_a_workspace_made_under_inference_mode_serves_plain_calls() -> None:
    """The engine decodes under ``torch.inference_mode``; the gather buffer it leaves in the
    per-thread cache must still take writes from a call outside it."""
    case = build_case([11, 7], page_size=3, num_kv_heads=1, head_dim=12)  # a fresh cache key
    q = random_queries(2, 2, 12, torch.float32)
    with torch.inference_mode():
        first = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="torch")
    again = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="torch")
    torch.testing.assert_close(first, again)
