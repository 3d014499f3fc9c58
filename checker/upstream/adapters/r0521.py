"""SGLang 0.5.21: the TP rank comes from ``get_parallel()``, the gloo group is still an
argument (``decode.py::DecodeTransferQueue.__init__(gloo_group,
req_to_metadata_buffer_idx_allocator, metadata_buffers, scheduler, tree_cache)``), and the
manager enables deferred release only on backends that ACK
(``common/conn.py::CommonKVManager.__init__``: ``and self.supports_deferred_decode_kv_release``).
"""

from __future__ import annotations

from typing import Any

from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.checker.upstream.adapters.r0519 import (
    ACK_WITHOUT_GENERATION,
    ALLOCATOR,
    HOSTS,
    SHARED,
    _ack,
    _stale_ack,
    queue_init,
)


def _queue(decode: Any, alloc: Any, buffers: Any, scheduler: Any, tree: Any) -> Any:
    return decode.DecodeTransferQueue(None, alloc, buffers, scheduler, tree)


def supports(env: bool, cls: type) -> bool:
    return bool(env and getattr(cls, "supports_deferred_decode_kv_release", False))


ADAPTER = Adapter(
    name="0.5.21",
    signatures=(
        queue_init("gloo_group", ALLOCATOR, *HOSTS),
        ACK_WITHOUT_GENERATION,
        *SHARED,
    ),
    make_queue=_queue,
    note_ack=_ack,
    note_stale_ack=_stale_ack,
    deferred=supports,
)
