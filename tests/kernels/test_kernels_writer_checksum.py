"""write_kv (slot math, padding slots) and page_checksum (== zlib.adler32)."""

from __future__ import annotations

import zlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kvproof.kernels.checksum as checksum
from kvproof.kernels import KernelInputError, page_checksum, paged_decode, write_kv


def _zlib(pool: torch.Tensor, ids: list[int]) -> int:
    raw = b"".join(
        pool[kv, i].contiguous().view(torch.uint8).numpy().tobytes() for i in ids for kv in (0, 1)
    )
    return zlib.adler32(raw)


def test_write_kv_places_tokens_and_skips_padding() -> None:
    pool = torch.zeros(2, 6, 4, 2, 8)
    k, v = torch.randn(5, 2, 8), torch.randn(5, 2, 8)
    slots = torch.tensor([0, -1, 4 * 5 + 3, 9, -1])
    write_kv(pool, k, v, slots)
    assert torch.equal(pool[0, 0, 0], k[0]) and torch.equal(pool[1, 0, 0], v[0])
    assert torch.equal(pool[0, 5, 3], k[2]) and torch.equal(pool[1, 5, 3], v[2])
    assert torch.equal(pool[0, 2, 1], k[3]) and torch.equal(pool[1, 2, 1], v[3])
    assert int((pool != 0).any(dim=(-1, -2)).sum()) == 6  # 3 tokens x (K, V); padding skipped


def test_write_kv_page_ids_above_32768_then_decode() -> None:
    """Write a sequence token by token onto high page ids, then decode it."""
    page_size, pages = 2, [40_001, 33_000, 39_999]
    pool = torch.full((2, 40_002, page_size, 1, 8), float("nan"))
    k, v = torch.randn(6, 1, 8), torch.randn(6, 1, 8)
    slots = torch.tensor([pages[t // page_size] * page_size + t % page_size for t in range(6)])
    write_kv(pool, k, v, slots.to(torch.int64))
    table = torch.tensor([pages], dtype=torch.int32)
    q = torch.randn(1, 2, 8)
    out = paged_decode(q, pool, table, torch.tensor([5], dtype=torch.int32), backend="torch")
    probs = torch.softmax((k[:5, 0] @ q[0].T) * 8**-0.5, dim=0)  # [5, 2]
    torch.testing.assert_close(out[0], probs.T @ v[:5, 0], atol=1e-5, rtol=1e-5)


def test_write_kv_rejects_out_of_pool_slot() -> None:
    pool = torch.zeros(2, 2, 4, 1, 8)
    with pytest.raises(KernelInputError):
        write_kv(pool, torch.zeros(1, 1, 8), torch.zeros(1, 1, 8), torch.tensor([8]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_checksum_equals_zlib(dtype: torch.dtype) -> None:
    pool = (torch.randn(2, 9, 16, 2, 32) * 50).to(dtype)
    ids = [3, 0, 8, 3]
    assert page_checksum(pool, ids) == _zlib(pool, ids)
    assert page_checksum(pool, torch.tensor(ids)) == _zlib(pool, ids)
    assert page_checksum(pool, []) == zlib.adler32(b"") == 1


def test_checksum_order_and_content_sensitive() -> None:
    pool = torch.randn(2, 4, 4, 1, 8)
    base = page_checksum(pool, [0, 1])
    assert base != page_checksum(pool, [1, 0])
    pool[1, 1, 3, 0, 7] += 1.0  # one V element of page 1
    assert base != page_checksum(pool, [0, 1])


@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 6), st.integers(1, 9), st.integers(1, 3), st.integers(1, 40)),
    ids=st.lists(st.integers(0, 5), max_size=8),
    row=st.sampled_from([7, 64, 4096]),
    chunk=st.sampled_from([100, 5000, 16 << 20]),
    seed=st.integers(0, 2**16),
)
def test_checksum_random_pools(shape, ids, row, chunk, seed) -> None:
    """Random geometry, and block/chunk sizes that split pages at odd places; bytes near
    255 make the sums wrap the modulus many times."""
    pages, page_size, heads, dim = shape
    gen = torch.Generator().manual_seed(seed)
    raw = torch.randint(200, 256, (2, pages, page_size, heads, dim * 4), generator=gen)
    pool = raw.to(torch.uint8).view(torch.float32)
    ids = [i % pages for i in ids]
    old = (checksum.ROW, checksum.CHUNK_BYTES)
    checksum.ROW, checksum.CHUNK_BYTES = row, chunk
    try:
        assert page_checksum(pool, ids) == _zlib(pool, ids)
    finally:
        checksum.ROW, checksum.CHUNK_BYTES = old
