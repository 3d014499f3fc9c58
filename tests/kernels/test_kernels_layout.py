"""Layout: FlashInfer CSR conversion, input checks, backend choice."""

from __future__ import annotations

import pytest
import torch
from paged_cases import build_case, random_queries

from kvproof.kernels import (
    KernelInputError,
    PoolShape,
    csr_to_page_table,
    paged_decode,
    paged_extend,
    resolve_backend,
)


def _to_csr(table: torch.Tensor, lens: torch.Tensor, page_size: int):
    counts = (lens.long() + page_size - 1) // page_size
    indptr = torch.zeros(len(lens) + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(counts, 0)
    indices = torch.cat([table[s, : int(c)] for s, c in enumerate(counts)])
    last = (lens.long() - (counts - 1) * page_size).to(torch.int32)
    return indptr, indices, last


def test_csr_round_trip_and_decode_equal() -> None:
    case = build_case([1, 16, 17, 40], page_size=8, seed=9)
    indptr, indices, last = _to_csr(case.page_table, case.kv_lens, 8)
    assert last.min() >= 1 and last.max() <= 8
    table, lens = csr_to_page_table(indptr, indices, last, 8)
    assert table.dtype == torch.int32 and lens.dtype == torch.int32
    assert torch.equal(lens, case.kv_lens)
    assert torch.equal(table, case.page_table[:, : table.shape[1]])
    q = random_queries(4, 4, 16, torch.float32)
    via_csr = paged_decode(q, case.kv_pool, table, lens, backend="torch")
    via_table = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="torch")
    assert torch.equal(via_csr, via_table)


def test_csr_rejects_bad_last_page_len() -> None:
    indptr = torch.tensor([0, 2], dtype=torch.int32)
    indices = torch.tensor([3, 4], dtype=torch.int32)
    with pytest.raises(KernelInputError):
        csr_to_page_table(indptr, indices, torch.tensor([0], dtype=torch.int32), 4)
    with pytest.raises(KernelInputError):
        csr_to_page_table(indptr, indices, torch.tensor([5], dtype=torch.int32), 4)


def test_pool_shape() -> None:
    shape = PoolShape.of(torch.empty(2, 10, 16, 8, 128))
    assert shape == PoolShape(num_pages=10, page_size=16, num_kv_heads=8, head_dim=128)
    with pytest.raises(KernelInputError):
        PoolShape.of(torch.empty(10, 16, 8, 128))


def test_input_errors() -> None:
    case = build_case([8, 5], page_size=4)
    q = random_queries(2, 4, 16, torch.float32)
    pool, table, lens = case.kv_pool, case.page_table, case.kv_lens
    with pytest.raises(KernelInputError, match="multiple"):
        paged_decode(random_queries(2, 3, 16, torch.float32), pool, table, lens)
    with pytest.raises(KernelInputError, match="head_dim"):
        paged_decode(random_queries(2, 4, 8, torch.float32), pool, table, lens)
    with pytest.raises(KernelInputError, match="differ"):
        paged_decode(q.half(), pool, table, lens)
    hole = table.clone()
    hole[0, 1] = -1
    with pytest.raises(KernelInputError, match="outside"):
        paged_decode(q, pool, hole, lens)
    with pytest.raises(KernelInputError, match="columns"):
        paged_decode(q, pool, table, torch.tensor([8, 400], dtype=torch.int32))
    with pytest.raises(KernelInputError, match="at least"):
        paged_decode(q, pool, table, torch.tensor([8, 0], dtype=torch.int32))
    with pytest.raises(KernelInputError, match="backend"):
        paged_decode(q, pool, table, lens, backend="cuda")
    with pytest.raises(KernelInputError, match="q_indptr"):
        paged_extend(q, pool, table, lens, torch.tensor([0, 1, 3], dtype=torch.int32))


def test_resolve_backend_on_cpu() -> None:
    pool = torch.empty(2, 1, 1, 1, 1)
    assert resolve_backend("auto", pool) == "torch"
    assert resolve_backend("reference", pool) == "reference"
