"""Decode's reservation for one prompt, asked of the release's code:
``disaggregation/decode.py::DecodePreallocQueue._pre_alloc`` (its fill length
``_pre_alloc_fill_len``, ``_required_alloc_tokens``, and ``alloc_for_decode_prealloc``),
on the release's queue class built without its ``__init__``.

Only the pools are ours, at the edge: the KV allocator hands out page-aligned slots and
counts the pages (``PagedAllocator``), the request-to-token table records nothing. No radix
cache, no HiSparse, no sliding window: the plain decode path of every release.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.upstream.intake import PAGE_SIZE
from kvproof.checker.upstream.scheduler import bare_scheduler, top_level_block
from kvproof.checker.upstream.stubs import Stub
from kvproof.spec.errors import KvproofInputError

DECODE = "sglang.srt.disaggregation.decode"
SCHED = "sglang.srt.managers.scheduler"
BATCH = "sglang.srt.managers.schedule_batch"


class PagedAllocator:
    """``mem_cache/allocator.py::PagedTokenToKVPoolAllocator``: ``alloc_extend`` returns
    the token slots of whole fresh pages, and counts them."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self.device = "cpu"
        self.pages = 0

    def available_size(self) -> int:
        return 1 << 30

    def alloc(self, need: int) -> Any:  # page_size 1
        import torch

        self.pages += need
        return torch.arange(need, dtype=torch.int64)

    def alloc_extend(self, *, prefix_lens_cpu: Any, seq_lens_cpu: Any, **kwargs: Any) -> Any:
        import torch

        new = int(seq_lens_cpu[0]) - int(prefix_lens_cpu[0])
        pages = -(-new // self.page_size)
        self.pages += pages
        return torch.arange(new, dtype=torch.int64) + self.page_size  # page 0 is reserved


class ReqToTokenPool:
    """``mem_cache/memory_pool.py::ReqToTokenPool``: one row per request, contents unread."""

    def alloc(self, reqs: list[Any]) -> list[int]:
        for req in reqs:
            req.kv.req_pool_idx = 0
        return [0]

    def write(self, *args: Any) -> None:
        return None


def reserved_pages(mods: dict[str, ModuleType], tokens: int) -> int:
    """The pages decode pre-allocates for a prompt of ``tokens`` tokens."""
    decode: Any = mods[DECODE]  # the release's module, patched: foreign
    # ``utils/common.py`` is a few thousand lines of stand-in module; its page arithmetic
    # is the release's own function, compiled alone from the release's file.
    utils = Path(str(decode.__file__)).parents[1] / "utils" / "common.py"
    if not utils.is_file():
        raise KvproofInputError(
            "no conform adapter for this SGLang code: sglang/srt/utils/common.py is missing "
            "(decode's page arithmetic, get_num_new_pages, lives there)",
            str(utils.parents[3]),
        )
    decode.get_num_new_pages = release_function(utils, "get_num_new_pages")
    allocator = PagedAllocator(PAGE_SIZE)
    queue = object.__new__(decode.DecodePreallocQueue)
    sched = bare_scheduler(
        mods[SCHED].Scheduler, dict(enable_hisparse=False, token_to_kv_pool_allocator=allocator)
    )
    fields = dict(
        scheduler=sched,
        token_to_kv_pool_allocator=allocator,
        token_to_kv_pool=SimpleNamespace(page_size=PAGE_SIZE),
        req_to_token_pool=ReqToTokenPool(),
        tree_cache=Stub(),  # no radix cache on decode: every hook is a no-op
    )
    for name, value in fields.items():
        object.__setattr__(queue, name, value)
    queue._pre_alloc(_decode_req(mods[BATCH].Req, tokens))
    return allocator.pages


def release_function(path: Path, name: str) -> Any:
    """One top-level function of a release's file, compiled alone (its line numbers kept,
    so a traceback names the release's file and line) over torch and ``typing``."""
    import __future__

    import typing

    import torch

    text = top_level_block(path.read_text(encoding="utf-8"), f"def {name}(")
    code = compile(
        text,
        str(path),
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    space: dict[str, Any] = {"torch": torch, **vars(typing)}
    exec(code, space)  # the release's own source, from the tree conform was given
    return space[name]


def _decode_req(req_cls: type, tokens: int) -> Any:
    """The release's ``Req`` as decode holds it before the transfer: the prompt, no output."""
    req: Any = object.__new__(req_cls)
    fields = dict(
        rid="req-reserve",
        origin_input_ids=list(range(tokens)),
        output_ids=[],
        kv=SimpleNamespace(req_pool_idx=None, kv_committed_len=0, kv_allocated_len=0),
    )
    for name, value in fields.items():
        object.__setattr__(req, name, value)
    return req
