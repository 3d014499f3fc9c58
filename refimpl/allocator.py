"""A page allocator with a LIFO free list: the most recently freed page is reused first.

That is what real engines do (a hot page is likely still in cache) and what makes stale KV
show up: the next request gets exactly the pages the last one left behind. Debug mode
raises on a double free or on handing out a page that someone still owns; without it, a
double free silently puts the page twice on the list, as in an engine without the checks.
"""

from __future__ import annotations

from kvproof.refimpl.errors import DoubleFree, DuplicateAllocation


class Allocator:
    def __init__(self, pages: range, *, debug: bool = True) -> None:
        self.pages = pages
        self.debug = debug
        self._stack: list[int] = list(reversed(pages))  # top = end; first alloc = lowest id
        self.owner: dict[int, int] = {}

    @property
    def free_count(self) -> int:
        return len(self._stack)

    def is_free(self, page: int) -> bool:
        return page in self.pages and page not in self.owner

    def free_pages(self) -> list[int]:
        """Free pages in the order the allocator would hand them out."""
        seen: set[int] = set()
        out = []
        for page in reversed(self._stack):
            if page not in seen:
                seen.add(page)
                out.append(page)
        return out

    def peek(self) -> int | None:
        return self._stack[-1] if self._stack else None

    def alloc(self, rid: int, page: int | None = None) -> int:
        """Hand out ``page`` (forced, e.g. by replay) or the top of the free list."""
        if page is None:
            if not self._stack:
                raise MemoryError("KV pool exhausted")
            page = self._stack.pop()
        elif page in self._stack:
            self._stack.remove(page)
        elif self.debug or page not in self.pages:
            raise DuplicateAllocation(f"page {page} is not free (owner {self.owner.get(page)})")
        if page in self.owner and self.debug:
            raise DuplicateAllocation(
                f"page {page} handed to {rid}, still owned by {self.owner[page]}"
            )
        self.owner[page] = rid
        return page

    def free(self, page: int) -> None:
        if self.debug and (page not in self.owner or page in self._stack):
            raise DoubleFree(f"page {page} freed while free")
        self.owner.pop(page, None)
        self._stack.append(page)
