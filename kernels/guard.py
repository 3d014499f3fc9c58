"""Owner-tag guard: refuse to attend over a page that belongs to someone else.

Each page carries the tag of its owner, ``make_tag(request_id, generation)``; a sequence
expects every page it reads (the first ``ceil(kv_len / page_size)`` table entries) to carry
its own tag. In the incident a recycled page still listed in a stale table was read by
the new owner's decode step (docs/upstream.md#press-reports); the check turns that silent
leak into an error flag. One vectorised compare of ``page_tags[table]`` costs a gather of
8 bytes per page, against ``page_size * heads * head_dim * 2`` elements of K/V read per
page by attention.
"""

from __future__ import annotations

import numpy as np
import torch

from kvproof.kernels.layout import KernelInputError, pages_needed


def check_tag_inputs(page_tags: torch.Tensor, expected_tags: torch.Tensor, num_seqs: int) -> None:
    """Shapes and dtypes of the two tag tensors (int64, as ``make_tag`` needs 64 bits)."""
    if page_tags.dim() != 1 or page_tags.dtype != torch.int64:
        raise KernelInputError(f"page_tags must be int64 [num_pages], got {page_tags.dtype}")
    if expected_tags.shape != (num_seqs,) or expected_tags.dtype != torch.int64:
        raise KernelInputError(
            f"expected_tags must be int64 [{num_seqs}], got {expected_tags.dtype} "
            f"{tuple(expected_tags.shape)}"
        )


def tag_mismatch(
    page_table: torch.Tensor,
    kv_lens: torch.Tensor,
    page_size: int,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
) -> torch.Tensor:
    """``bool [num_seqs]``: True where a page the sequence would read has a foreign tag.

    A -1 or out-of-range id inside the read range also counts: the sequence would read a
    page nobody gave it. Entries past the read range are padding and are ignored.
    """
    if not (page_table.is_cuda or kv_lens.is_cuda or page_tags.is_cuda):
        if page_table.numel() <= LOOP_MAX_IDS:
            rows, lens, expected = page_table.tolist(), kv_lens.tolist(), expected_tags.tolist()
            return _tag_mismatch_loop(rows, lens, page_size, page_tags.numpy().data, expected)
        table = page_table.numpy()  # a view, made once for either numpy path
        full = _tag_mismatch_full_rows(table, kv_lens, page_size, page_tags, expected_tags)
        if full is not None:
            return full
        return _tag_mismatch_numpy(table, kv_lens, page_size, page_tags, expected_tags)
    return _tag_mismatch_torch(page_table, kv_lens, page_size, page_tags, expected_tags)


# Tables up to this many ids take the loop on CPU: at the engine's one sequence of ~27 pages
# it costs 5.6 us warm against numpy's 13 us, and far less cold: the engine checks once per
# request, at commit, when numpy's dispatch code is out of the caches (numpy's check took
# 73 us a call inside benchmarks/engine.py's workload; the loop runs on the interpreter's
# own hot code). numpy's cost is nearly flat (12.8 / 13.8 / 14.1 us warm at 27 / 128 / 256
# ids) while the loop's grows (7.2 / 13.1 / 21.6 us): they cross near 128 ids, so a 4k-token
# sequence of 16-token pages (256 ids) takes numpy (issue 30, benchmarks/kernels.py).
LOOP_MAX_IDS = 128


def _tag_mismatch_loop(
    rows: list[list[int]], lens: list[int], page_size: int, tags: memoryview, expected: list[int]
) -> torch.Tensor:
    """The check as a Python loop over the ids each sequence reads, stopping at the first
    foreign page. ``tags``: a memoryview of the tag tensor's storage (no copy: it sees
    every write up to the call)."""
    n = len(tags)
    out = []
    for row, length, tag in zip(rows, lens, expected, strict=True):
        foreign = False
        for page in row[: -(-length // page_size)]:
            if not 0 <= page < n or tags[page] != tag:
                foreign = True
                break
        out.append(foreign)
    return torch.tensor(out, dtype=torch.bool)


def _tag_mismatch_torch(
    page_table: torch.Tensor,
    kv_lens: torch.Tensor,
    page_size: int,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
) -> torch.Tensor:
    """The check as torch ops on the tensors' device: no host sync on CUDA."""
    needed = pages_needed(kv_lens, page_size).to(page_table.device)
    width = page_table.shape[1]
    used = torch.arange(width, device=page_table.device)[None, :] < needed[:, None]
    ids = page_table.to(torch.int64)
    in_pool = (ids >= 0) & (ids < page_tags.shape[0])
    tags = page_tags[ids.clamp(0, page_tags.shape[0] - 1)]
    foreign = (tags != expected_tags[:, None]) | ~in_pool
    return (foreign & used).any(dim=1)


def _tag_mismatch_full_rows(
    table: np.ndarray,
    kv_lens: torch.Tensor,
    page_size: int,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
) -> torch.Tensor | None:
    """The check in five numpy calls where the table is int32 (the kernels' and SGLang's
    ``req_to_token`` dtype), every sequence reads every id of its row (no padding: no mask
    to build) and every id lies in the pool; None otherwise, and the caller runs the full
    check. Right after a decode has streamed the KV through the
    caches each call into numpy or torch costs 10-18 us against 1-3 us warm, so the number
    of calls is the cost: 112 against 150 us at 8 x 64 ids, 139 against 187 us at 8 x 1024
    (issue 30, ``benchmarks/kernels.py``'s ``guard_check_share``). ``table``: the page
    table's numpy view."""
    if table.dtype != np.int32:
        return None
    width = table.shape[1]
    if any(-(-n // page_size) < width for n in kv_lens.tolist()):
        return None
    # Viewed unsigned, a negative int32 id is past 2**31: ``take`` then raises for it as for
    # any id past the pool (the default mode), where ``clip`` would read some real page's
    # tag. Not int64: numpy turns uint64 indices back into int64, and -1 wraps to the last
    # page (the property test caught it).
    ids = table.view(np.uint32)
    try:
        seen = page_tags.numpy().take(ids)
    except IndexError:
        return None
    return torch.from_numpy((seen != expected_tags.numpy()[:, None]).any(axis=1))


def _tag_mismatch_numpy(
    table: np.ndarray,
    kv_lens: torch.Tensor,
    page_size: int,
    page_tags: torch.Tensor,
    expected_tags: torch.Tensor,
) -> torch.Tensor:
    """The same check on CPU tensors through numpy views (no copies): each numpy call costs
    ~1-3 us against ~5-8 us for a torch op, which keeps the guard near 1% of a 1k-token
    decode (benchmarks/kernels.py reports ``guard_check_share``). ``table``: the page
    table's numpy view."""
    tags = page_tags.numpy()
    needed = (kv_lens.numpy().astype(np.int64) + (page_size - 1)) // page_size
    used = np.arange(table.shape[1]) < needed[:, None]
    foreign = np.take(tags, table, mode="clip") != expected_tags.numpy()[:, None]
    # viewed unsigned, -1 becomes huge: one compare rejects negative and too-large ids
    unsigned = table.view(np.uint32 if table.itemsize == 4 else np.uint64)
    foreign |= np.greater_equal(unsigned, tags.shape[0])
    foreign &= used
    return torch.from_numpy(foreign.any(axis=1))
