"""The engine's state abstracted for conformance: names and fields of ``model/handoff/protocol.py``.

``Cluster.view()`` returns one ``EngineView``; the checker compares it with the model
state after each event. Ghost fields (``stray``, ``leaked``) are ground truth from the
transfer engine and the pool metadata; the engine itself never reads them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageView:
    page: int
    owner: int | None  # request whose table holds the page (decode side)
    writer: int | None  # whose KV the bytes are; None: never written by this cluster
    filled: bool  # a write landed since the current allocation
    stray: bool  # a write landed here while its writer did not own the page
    at_pos: bool = False  # the last write was exact: every slot, at its chunk index
    # decode's radix cache (issue 12 item 4)
    cached: bool = False  # the radix tree maps the page
    prefix_ok: bool = False  # it still holds the KV it was inserted with (ground truth)
    shared_write: bool = False  # a write landed while the tree mapped it (ground truth)


@dataclass(frozen=True)
class RequestView:
    rid: int
    over_p: bool
    over_d: bool
    dphase: str  # idle | queued | transfer | running | draining | done
    pphase: str  # idle | waiting | active | sent | stopped
    poll: str  # none | transferring | success | failed
    resp: str  # none | ok | rejected | error | aborted
    pend: bool  # prefill's pending abort (to_finish)
    abort_msg: bool
    src_ok: bool  # prefill's source KV is still this request's
    table: tuple[int, ...]  # decode pages owned, in allocation order
    dst: tuple[int, ...]  # prefill's copy of the destination pages
    posted: tuple[int, ...]
    inflight: tuple[int, ...]  # posted, not landed (cannot be cancelled)
    leaked: bool  # decode read a page not holding this request's fresh KV
    hit: bool = False  # decode's prefix cache held the prompt's head (issue 12 item 3)
    shared: tuple[int, ...] = ()  # head pages locked in decode's radix tree (issue 12 item 4)
    p_dead: bool = False  # the prefill serving it died (crash, E20: liveness replays)


@dataclass(frozen=True)
class EngineView:
    pages: tuple[PageView, ...]
    requests: tuple[RequestView, ...]


@dataclass(frozen=True)
class PoolCounts:
    """Pages per pool and how many are free now (``Cluster.counts()``): what a server
    reports and admits against, without reaching into the allocators."""

    prefill_pages: int
    prefill_free: int
    decode_pages: int  # the pages a prompt's KV can take (the tail region apart)
    decode_free: int
    tail_pages: int  # decode's tail region, where generated tokens grow
    tail_free: int
