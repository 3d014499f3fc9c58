"""What one adapter says about its release range (``r0519.py``, ``r0521.py``, ...)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Adapter:
    name: str  # the release range, e.g. "0.5.19-0.5.20"
    # "module:Class.function" -> the parameter names the adapter calls it with
    signatures: tuple[tuple[str, tuple[str, ...]], ...]
    make_queue: Callable[..., Any]  # (decode, allocator, buffers, scheduler, tree) -> queue
    # (common conn module, manager, receiver, prefill rank): one rank's ABORT_ACK
    note_ack: Callable[[Any, Any, Any, int], None]
    # (common conn module, manager, receiver, prefill rank): one rank's late ABORT_ACK of an
    # earlier abort of the receiver's room (``stale_ack``), as the wire carries it
    note_stale_ack: Callable[[Any, Any, Any, int], None]
    # deferred release as the manager computes it from the env switch
    deferred: Callable[[bool, type], bool]
    # ``DecodeTransferQueue.resolve_deferred_releases`` and the ACK accounting exist
    # (0.5.19+); without them there is no hold to resolve each pass.
    deferred_machinery: bool = True
