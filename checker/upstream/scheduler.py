"""The ``self`` that ``Scheduler.abort_request`` runs on: the release's own ``Scheduler``
class, built without its ``__init__`` (which starts workers, NCCL and sockets).

Every attribute the release's ``Scheduler`` assigns anywhere in its class body
(``self.X = ...``, read from ``managers/scheduler.py`` with ``ast``) is set, so a refactor
of the abort path that reads one more field (``self.tree_cache``, ``self.req_to_token_pool``,
``self.token_to_kv_pool_allocator``, ``self.server_args``...) still runs. The fields the
decode abort path decides with get stand-ins that behave (the queues, the tree cache and the
pools free through ``Pages``); every other one is a permissive stand-in (``stubs.Stub``:
falsy, callable, iterable, empty). The methods stay the release's
(``collect_inflight_reqs``, ``_release_aborted_request``, ...).
"""

from __future__ import annotations

import ast
import inspect
import os
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kvproof.checker.upstream.host import Outcome, TreeCache
from kvproof.checker.upstream.pages import Pages
from kvproof.checker.upstream.stubs import Stub


class ReqToTokenPool:
    """``mem_cache/memory_pool.py::ReqToTokenPool``: a request's row is the pages it owns
    (one token per page at conform's size), by ``req.req_pool_idx``."""

    def __init__(self, pages: Pages) -> None:
        self._pages = pages

    @property
    def req_to_token(self) -> Any:
        return {r: sorted(self._pages.of(r)) for r in set(self._pages.owner.values())}

    def free(self, req: Any) -> None:
        return None  # the row slot, not the KV pages


class TokenToKVPoolAllocator:
    """``mem_cache/allocator.py::TokenToKVPoolAllocator``: ``free`` gives pages back."""

    def __init__(self, pages: Pages) -> None:
        self._pages = pages
        self.page_size = 1

    def free(self, indices: Any) -> None:
        for p in [int(i) for i in indices]:
            owner = self._pages.owner.pop(p, None)
            if owner is not None and owner not in self._pages.released:
                self._pages.released.append(owner)

    def available_size(self) -> int:
        return 1 << 20


def scheduler_self(
    sched_cls: type, mode: Any, transfer_queue: Any, outcome: Outcome, pages: Pages
) -> Any:
    """The release's ``Scheduler`` in decode mode with no chunked, waiting, grammar or
    running request: only the disaggregation queues hold requests."""
    stream = SimpleNamespace(
        stream_output=lambda reqs, *a, **k: outcome.streamed.extend(q.r for q in reqs)
    )
    prealloc = SimpleNamespace(queue=[], retracted_queue=[], note_destinations_queued=_none)
    fields: dict[str, Any] = dict(
        disaggregation_mode=mode,
        chunked_req=None,
        mm_receiver=None,
        waiting_queue=[],
        dllm_config=None,
        enable_hicache_storage=False,
        enable_decode_hicache=False,
        enable_hisparse=False,
        enable_continuous_input_polling=False,
        result_queue=[],
        grammar_manager=SimpleNamespace(abort_requests=_none),
        disagg_decode_prealloc_queue=prealloc,
        disagg_decode_transfer_queue=transfer_queue,
        tree_cache=TreeCache(pages),
        req_to_token_pool=ReqToTokenPool(pages),
        token_to_kv_pool_allocator=TokenToKVPoolAllocator(pages),
        page_size=1,
        ps=SimpleNamespace(pp_size=1),
        running_batch=SimpleNamespace(reqs=[], is_empty=lambda: True),
        running_mbs=[],
        mbs=[],
        cur_batch=None,
        last_batch=None,
        spec_algorithm=SimpleNamespace(is_none=lambda: True),
        output_streamer=stream,
        metrics_reporter=SimpleNamespace(enable_metrics=False),
        ipc_channels=SimpleNamespace(send_to_tokenizer=SimpleNamespace(send_output=_none)),
    )
    return bare_scheduler(sched_cls, fields)


def bare_scheduler(sched_cls: type, fields: dict[str, Any]) -> Any:
    """The release's ``Scheduler`` without its ``__init__``: every field its class body
    assigns a permissive stand-in, then ``fields``."""
    sched: Any = object.__new__(sched_cls)
    for name in assigned_fields(sched_cls):
        object.__setattr__(sched, name, Stub())
    for name, value in fields.items():
        object.__setattr__(sched, name, value)
    return sched


def assigned_fields(cls: type) -> tuple[str, ...]:
    """Every ``self.X`` the class body assigns (in ``__init__`` and the ``init_*`` methods
    it calls), read from the release's source (parsed once per file version)."""
    file = inspect.getsourcefile(cls)
    if file is None:
        return ()
    stat = os.stat(file)
    names = _assigned(file, stat.st_mtime_ns, stat.st_size, cls.__name__)
    # A property the class defines is not an instance field (setting it would fail).
    return tuple(n for n in names if not isinstance(getattr(cls, n, None), property))


@cache
def _assigned(file: str, mtime: int, size: int, name: str) -> tuple[str, ...]:
    text = top_level_block(Path(file).read_text(encoding="utf-8"), f"class {name}(")
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        targets: list[Any] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    names.add(sub.attr)
    return tuple(sorted(names))


def top_level_block(text: str, head: str) -> str:
    """The top-level ``class``/``def`` that starts with ``head``, up to the next top-level
    statement (blank lines before the first line kept, so line numbers match the file)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(head))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#)"):
        end += 1
    return "\n" * start + "".join(lines[start:end])


def _none(*args: Any, **kwargs: Any) -> None:
    return None
