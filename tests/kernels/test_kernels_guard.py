"""Owner-tag guard: a table entry naming someone else's page flags exactly that sequence."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from paged_cases import build_case, extend_layout, random_queries, tamper

import kvproof.kernels.torch_paged as torch_paged
from kvproof.kernels import (
    make_tag,
    paged_decode,
    paged_decode_guarded,
    paged_extend,
    paged_extend_guarded,
    tag_mismatch,
)
from kvproof.kernels.guard import (
    LOOP_MAX_IDS,
    _tag_mismatch_full_rows,
    _tag_mismatch_loop,
    _tag_mismatch_numpy,
    _tag_mismatch_torch,
)

BACKENDS = ["torch", "reference"]


def _decode_guarded(case, q, backend):
    return paged_decode_guarded(
        q,
        case.kv_pool,
        case.page_table,
        case.kv_lens,
        case.page_tags,
        case.expected_tags,
        backend=backend,
    )


def test_make_tag() -> None:
    assert make_tag(5, 7) == (5 << 32) | 7
    assert make_tag(5, 7) != make_tag(5, 8) != make_tag(6, 7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clean_batch_matches_unguarded(backend: str) -> None:
    case = build_case([7, 30, 16], page_size=4)
    q = random_queries(3, 4, 16, torch.float32)
    out, err = _decode_guarded(case, q, backend)
    plain = paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend=backend)
    assert err.dtype == torch.bool and not err.any()
    assert torch.equal(out, plain)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("column", [0, 3])
def test_tampered_entry_flags_exactly_that_sequence(backend: str, column: int) -> None:
    case = build_case([20, 30, 16, 25], page_size=4, seed=1)
    q = random_queries(4, 4, 16, torch.float32)
    clean, _ = _decode_guarded(case, q, backend)
    bad = tamper(case, victim=2, donor=0, column=column)
    out, err = _decode_guarded(bad, q, backend)
    assert err.tolist() == [False, False, True, False]
    assert torch.equal(out[2], torch.zeros_like(out[2]))
    keep = [0, 1, 3]
    assert torch.equal(out[keep], clean[keep])
    # the unguarded kernel would have silently mixed the donor's page into the output
    leaked = paged_decode(q, bad.kv_pool, bad.page_table, bad.kv_lens, backend=backend)
    assert not torch.allclose(leaked[2], clean[2])


def test_flagged_sequence_never_reads_the_foreign_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch path skips a flagged sequence before any gather: spy on index_select."""
    case = build_case([8, 8], page_size=4)
    bad = tamper(case, victim=1, donor=0)
    q = random_queries(2, 2, 16, torch.float32)
    num_pages = case.kv_pool.shape[1]
    seen: set[int] = set()
    real = torch.index_select

    def spy(src, dim, index, **kw):
        seen.update(i % num_pages for i in index.tolist())  # K rows i, V rows num_pages + i
        return real(src, dim, index, **kw)

    monkeypatch.setattr(torch_paged.torch, "index_select", spy)
    _, err = _decode_guarded(bad, q, "torch")
    assert err.tolist() == [False, True]
    assert seen == set(bad.page_table[0, :2].tolist())  # only sequence 0's own pages


@pytest.mark.parametrize("backend", BACKENDS)
def test_padding_and_bad_ids_inside_the_read_range(backend: str) -> None:
    case = build_case([8, 8, 8], page_size=4)
    table = case.page_table.clone()
    table[0, 2] = 999  # padding column past the read range: ignored
    table[1, 1] = -1  # a hole inside the read range: flagged, not an exception
    table[2, 0] = case.kv_pool.shape[1] + 5  # outside the pool: flagged
    out, err = paged_decode_guarded(
        random_queries(3, 2, 16, torch.float32),
        case.kv_pool,
        table,
        case.kv_lens,
        case.page_tags,
        case.expected_tags,
        backend=backend,
    )
    assert err.tolist() == [False, True, True]
    assert not out[1:].any() and not torch.isnan(out).any()


def test_stale_generation_is_foreign() -> None:
    """Same request id, older generation (an aborted request's page still in a table)."""
    case = build_case([8], page_size=4)
    tags = case.page_tags.clone()
    tags[case.page_table[0, 1]] = make_tag(1000, 2)  # expected is make_tag(1000, 3)
    err = tag_mismatch(case.page_table, case.kv_lens, 4, tags, case.expected_tags)
    assert err.tolist() == [True]


@pytest.mark.parametrize("backend", BACKENDS)
def test_extend_guarded(backend: str) -> None:
    lens, prefix, indptr = extend_layout([12, 0, 9, 4], [1, 10, 3, 0])
    case = build_case(lens, page_size=4, seed=2)
    q = random_queries(int(indptr[-1]), 4, 16, torch.float32)
    args = (q, case.kv_pool)
    clean = paged_extend(*args, case.page_table, prefix, indptr, backend=backend)
    bad = tamper(case, victim=2, donor=1, column=2)
    bad = tamper(bad, victim=3, donor=1)  # no new tokens: reads nothing, never flagged
    out, err = paged_extend_guarded(
        *args, bad.page_table, prefix, indptr, case.page_tags, case.expected_tags, backend=backend
    )
    assert err.tolist() == [False, False, True, False]
    rows_2 = slice(int(indptr[2]), int(indptr[3]))
    assert not out[rows_2].any()
    keep = torch.ones(q.shape[0], dtype=torch.bool)
    keep[rows_2] = False
    assert torch.equal(out[keep], clean[keep])


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(1, 12), st.lists(st.integers(-2, 9), min_size=4, max_size=4)),
        min_size=1,
        max_size=4,
    ),
    tags=st.lists(st.integers(0, 2), min_size=8, max_size=8),
    table_dtype=st.sampled_from([torch.int32, torch.int64]),
)
def test_tag_checks_agree_with_plain_python(rows, tags, table_dtype) -> None:
    """The three implementations (a loop on small CPU tables, numpy on larger ones, torch on
    CUDA) against a plain loop, with holes (-1), ids past the pool (8, 9), padding columns
    and clashing tags."""
    page_size = 3
    lens = torch.tensor([n for n, _ in rows], dtype=torch.int32)
    table = torch.tensor([ids for _, ids in rows], dtype=table_dtype)
    page_tags = torch.tensor(tags, dtype=torch.int64)
    expected = torch.tensor([s % 3 for s in range(len(rows))], dtype=torch.int64)
    want = []
    for s, (n, ids) in enumerate(rows):
        read = ids[: (n + page_size - 1) // page_size]
        want.append(any(not 0 <= i < 8 or tags[i] != s % 3 for i in read))
    args = (table, lens, page_size, page_tags, expected)
    as_lists = (table.tolist(), lens.tolist(), page_size, memoryview(page_tags.numpy()))
    assert _tag_mismatch_loop(*as_lists, expected.tolist()).tolist() == want
    assert _tag_mismatch_numpy(table.numpy(), *args[1:]).tolist() == want
    assert _tag_mismatch_torch(*args).tolist() == want
    assert tag_mismatch(*args).tolist() == want
    full = _tag_mismatch_full_rows(table.numpy(), *args[1:])
    reads_all = all((n + page_size - 1) // page_size >= 4 for n, _ in rows)
    in_pool = all(0 <= i < 8 for _, ids in rows for i in ids)
    # It answers only for an int32 table read whole with every id in the pool, then rightly.
    int32 = table_dtype == torch.int32
    assert (full is not None) == (int32 and reads_all and in_pool)
    assert full is None or full.tolist() == want


@pytest.mark.parametrize("table_dtype", [torch.int32, torch.int64])
def test_the_whole_rows_path_flags_a_foreign_page_and_leaves_bad_ids_to_the_full_check(
    table_dtype: torch.dtype,
) -> None:
    """Tables past the loop's size where every row is read whole take five numpy calls; a
    foreign tag is flagged there, and an id outside the pool (-1, past the end) goes to the
    full check, which flags it too (numpy's ``take`` would wrap -1 to the last page)."""
    rows, width, page_size = 4, 40, 16
    table = torch.arange(rows * width, dtype=table_dtype).view(rows, width)
    lens = torch.full((rows,), width * page_size, dtype=torch.int32)
    tags = torch.arange(rows, dtype=torch.int64).repeat_interleave(width)
    expected = torch.arange(rows, dtype=torch.int64)
    assert table.numel() > LOOP_MAX_IDS
    if table_dtype == torch.int64:  # numpy would wrap a negative int64 id: never this path
        assert _tag_mismatch_full_rows(table.numpy(), lens, page_size, tags, expected) is None
        return
    clean = _tag_mismatch_full_rows(table.numpy(), lens, page_size, tags, expected)
    assert clean.tolist() == [False] * 4
    foreign = tags.clone()
    foreign[width * 2 + 7] = 0  # row 2 reads a page of request 0
    got = _tag_mismatch_full_rows(table.numpy(), lens, page_size, foreign, expected)
    assert got.tolist() == tag_mismatch(table, lens, page_size, foreign, expected).tolist()
    assert got.tolist() == [False, False, True, False]
    for bad_id in (-1, rows * width):
        holed = table.clone()
        holed[1, 5] = bad_id
        assert _tag_mismatch_full_rows(holed.numpy(), lens, page_size, tags, expected) is None
        assert tag_mismatch(holed, lens, page_size, tags, expected).tolist() == [
            False,
            True,
            False,
            False,
        ]
    short = lens.clone()
    short[3] = page_size  # row 3 reads one page: a mask is needed, the full check runs
    assert _tag_mismatch_full_rows(table.numpy(), short, page_size, tags, expected) is None
