from __future__ import annotations

import pytest

from kvproof.refimpl.allocator import Allocator
from kvproof.refimpl.errors import DoubleFree, DuplicateAllocation


def test_recently_freed_pages_are_reused_first() -> None:
    a = Allocator(range(8))
    first = [a.alloc(0) for _ in range(3)]
    assert first == [0, 1, 2]
    for page in first:
        a.free(page)
    assert [a.alloc(1) for _ in range(3)] == [2, 1, 0]  # LIFO: hot pages first


def test_forced_allocation_takes_exactly_that_page() -> None:
    a = Allocator(range(4))
    assert a.alloc(0, page=3) == 3
    assert a.owner == {3: 0}
    assert 3 not in a.free_pages()


def test_debug_raises_on_double_free() -> None:
    a = Allocator(range(4), debug=True)
    page = a.alloc(0)
    a.free(page)
    with pytest.raises(DoubleFree):
        a.free(page)


def test_debug_raises_on_duplicate_allocation() -> None:
    a = Allocator(range(4), debug=True)
    page = a.alloc(0)
    with pytest.raises(DuplicateAllocation):
        a.alloc(1, page=page)


def test_without_debug_a_double_free_hands_one_page_to_two_owners() -> None:
    a = Allocator(range(4), debug=False)
    page = a.alloc(0)
    a.free(page)
    a.free(page)  # silently pushed twice, as in an engine without the checks
    assert a.alloc(1) == page
    assert a.alloc(2) == page  # the same page, now "owned" by two requests
