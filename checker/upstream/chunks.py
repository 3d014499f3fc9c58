"""Prefill's chunked send of one prompt, asked of the release's code: which pages each chunk
carries and which chunk is the last, as ``send_kv_chunk`` and the sender decide them.

The real path, per chunk of a chunked prefill: the scheduler's batch result calls
``disaggregation/prefill.py::SchedulerDisaggregationPrefillMixin.send_kv_chunk`` (the last
chunk with ``last_chunk=True``); it holds back a partial last page of a chunk that is not
the last, turns the token slots into pages (``kv_to_page_indices``) and hands them to the
sender's ``send``; the release's ``MooncakeKVSender.send`` counts them against what
``finalize_bootstrap`` gave its ``init`` (``curr_idx == num_kv_indices``: the last chunk) and
queues each chunk with ``add_transfer_request(room, pages, slice, is_last_chunk)``. That
queue is the edge: ``Queued`` records each chunk instead of a transfer worker taking it.

The glue between chunks (the scheduler's loop advancing ``extend_end`` by
``CHUNK_TOKENS``) is the server's, the same in every release.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

PREFILL = "sglang.srt.disaggregation.prefill"
MOONCAKE = "sglang.srt.disaggregation.mooncake.conn"
CHUNK_TOKENS = 512  # --chunked-prefill-size: a 1,025-token prompt is three chunks


@dataclass(frozen=True)
class Chunks:
    """What prefill's sender queued for one prompt, chunk by chunk."""

    pages: tuple[int, ...]  # pages per chunk, in order
    last: tuple[bool, ...]  # the sender's is_last_chunk per chunk

    @property
    def ended(self) -> bool:
        """Some chunk was flagged last: the worker concludes the room after it."""
        return any(self.last)

    @property
    def sent(self) -> int:
        """The pages written when prefill reports done: every chunk up to the first one
        flagged last (a later chunk's pages land after decode was told Success)."""
        end = self.last.index(True) + 1 if self.ended else len(self.pages)
        return sum(self.pages[:end])


class _Slots:
    """The token pool's rows as ``send_kv_chunk`` indexes them (a torch tensor upstream):
    slicing, ``//`` and ``.cpu().numpy()``."""

    def __init__(self, values: Any) -> None:
        self.values = np.asarray(values)

    def __getitem__(self, key: Any) -> _Slots:
        return _Slots(self.values[key])

    def __floordiv__(self, other: int) -> _Slots:
        return _Slots(self.values // other)

    def __len__(self) -> int:
        return len(self.values)

    def cpu(self) -> _Slots:
        return self

    def numpy(self) -> Any:
        return self.values


class _Queued:
    """The sender's manager, as far as ``send`` reaches it: the transfer queue records."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, bool]] = []
        self.enable_all_cp_ranks_for_transfer = False
        self.is_dummy_cp_rank = False
        self.kv_shard_size = 1  # 0.5.23: one KV shard (no shard filtering)
        self._dcp_pack_max_tokens = None
        self.transfer_infos: dict[int, Any] = {}

    def prepare_send_state_indices(self, state_indices: Any) -> Any:
        return state_indices  # 0.5.23: no state components (a dense model)

    def add_transfer_request(
        self, room: int, kv_indices: Any, index_slice: Any, is_last: bool, *a: Any, **k: Any
    ) -> None:
        self.chunks.append((len(kv_indices), bool(is_last)))


def send_chunks(mods: dict[str, ModuleType], req: Any, num_pages: int, page_size: int) -> Chunks:
    """Prefill ``req`` in chunks and send each, as the release does, to a sender its
    ``finalize_bootstrap`` initialised with ``num_pages``."""
    tokens = len(req.origin_input_ids)
    queued = _Queued()
    sender: Any = object.__new__(mods[MOONCAKE].MooncakeKVSender)
    fields = dict(
        kv_mgr=queued,
        bootstrap_room=req.bootstrap_room,
        curr_idx=0,
        aux_index=None,
        trace_ctx=SimpleNamespace(copy_for_thread=lambda: None),
        _transfer_num_kv_indices=0,
        _transfer_num_state_indices=0,
        _early_send_wait_event=None,
        conclude_state=None,  # the room has not concluded (0.5.23 checks first)
        _transfer_start_time=None,
        # 0.5.23: no pinned host copy of the page indices (a CUDA stream); the same pages
        # go through ``kv_to_page_indices`` on the CPU path.
        supports_host_tensor_indices=False,
    )
    for name, value in fields.items():
        object.__setattr__(sender, name, value)
    sender.init(num_pages, 0)
    mixin = mods[PREFILL].SchedulerDisaggregationPrefillMixin
    sched = _scheduler(mixin, tokens, page_size)
    # The request's row in the token pool: 0.5.15-0.5.17 read ``req.req_pool_idx``.
    for name, value in dict(disagg_kv_sender=sender, start_send_idx=0, req_pool_idx=0).items():
        object.__setattr__(req, name, value)
    object.__setattr__(req, "kv", SimpleNamespace(**{**vars(req.kv), "req_pool_idx": 0}))
    ends = [*range(CHUNK_TOKENS, tokens, CHUNK_TOKENS), tokens]
    for n, end in enumerate(ends, start=1):
        # 0.5.21+ read ``extend_end``, earlier ``extend_range.end``.
        object.__setattr__(req, "extend_end", end)
        object.__setattr__(req, "extend_range", SimpleNamespace(start=0, end=end))
        mixin.send_kv_chunk(sched, req, last_chunk=n == len(ends))
    return Chunks(tuple(p for p, _ in queued.chunks), tuple(last for _, last in queued.chunks))


def _scheduler(mixin: Any, tokens: int, page_size: int) -> Any:
    """Prefill's scheduler as ``send_kv_chunk`` reads it: one request's token slots laid out
    from slot 0 (page i holds tokens i*page_size...), no staging, no checksum, no state."""
    sched: Any = SimpleNamespace(
        token_to_kv_pool_allocator=SimpleNamespace(
            page_size=page_size, translate_kv_indices_for_transfer=lambda x: x
        ),
        req_to_token_pool=SimpleNamespace(req_to_token=_Slots([np.arange(tokens)])),
        disagg_metadata_buffers=SimpleNamespace(set_buf=lambda req: None),
        disagg_prefill_bootstrap_queue=SimpleNamespace(
            kv_manager=SimpleNamespace(kv_args=SimpleNamespace(state_types=[]))
        ),
        disagg_prefill_pending_chunk_rids=set(),
        enable_staging=False,
        kv_checksum_computer=None,
    )
    # 0.5.21+ split the method: ``send_kv_chunk`` (checksum) calls ``_send_kv_chunk``.
    if "_send_kv_chunk" in vars(mixin):
        sched._send_kv_chunk = lambda *a, **k: mixin._send_kv_chunk(sched, *a, **k)
    return sched
