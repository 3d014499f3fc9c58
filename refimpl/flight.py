"""One request in flight: what the router, prefill and decode each keep of it, in one record.

The model's state is per request (``model/handoff/protocol.py``: ``dphase[r]``,
``pphase[r]``, ``poll[r]``, ...); the engine keeps the same facts where each node keeps
them (the router's ``Request``, prefill's ``PrefillReq``, decode's ``DecodeReq``), and a
``Flight`` ties the three together so that a rule reads one request's state in one place.
The record itself never changes (its parts do, as the nodes move the request on).

``FlightStatus`` and ``FlightPages`` are the read-only snapshots that ``Cluster`` hands to
the checker (``ops/serve``, ``checker/conformance``) instead of the engine's records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

from kvproof.refimpl.decode import DecodeReq
from kvproof.refimpl.prefill import PrefillReq
from kvproof.refimpl.router import Request


@dataclass(frozen=True, slots=True)
class Flight:
    req: Request  # the router's: prompt, KVPoll as decode sees it, the client's response
    p: PrefillReq  # the sender's side (prefill): its pages, destinations, posted writes
    d: DecodeReq  # the receiver's side (decode): its reservation, table, tokens
    # decode page -> chunk index the write posted there should carry (for the recorder
    # only: issue 12 item 3, a write at the wrong position)
    meant: dict[int, int] = field(default_factory=dict)

    @property
    def rid(self) -> int:
        return self.req.rid

    def status(self) -> FlightStatus:
        req, p, d = self.req, self.p, self.d
        return FlightStatus(
            req.rid,
            req.arrived,
            d.phase,
            p.phase,
            req.poll,
            req.resp,
            len(p.tokens),
            len(d.tokens),
            req.guard_trips,
        )

    def pages(self) -> FlightPages:
        p, d = self.p, self.d
        return FlightPages(tuple(p.pages), tuple(d.table), tuple(sorted(p.posted)))


@dataclass(frozen=True, slots=True)
class FlightStatus:
    """Where one request stands (a snapshot: later events do not change it)."""

    rid: int
    arrived: bool
    decode: str  # decode's phase: idle | queued | transfer | running | draining | done
    prefill: str  # prefill's phase: idle | waiting | active | sent | stopped
    poll: str  # KVPoll as decode sees it: none | transferring | success | failed
    resp: str  # none | ok | rejected | error | aborted
    prefilled: int  # tokens prefill runs: the prompt's, or 1 for the placeholder (#30233)
    generated: int  # tokens decode produced so far
    guard_trips: int  # reads the owner-tag guard refused


@dataclass(frozen=True, slots=True)
class FlightPages:
    """One request's pages (a snapshot)."""

    prefill: tuple[int, ...]  # prefill's own pages in position order (kept after release)
    table: tuple[int, ...]  # decode's table, in allocation order
    posted: tuple[int, ...]  # destination pages the sender posted a write to, ascending


class Requests(Sequence[Request]):
    """The router's records of ``flights``, by id: a live read of the flights (no copy,
    so indexing stays O(1) however many requests a long run submitted)."""

    def __init__(self, flights: list[Flight]) -> None:
        self._flights = flights

    def __len__(self) -> int:
        return len(self._flights)

    @overload
    def __getitem__(self, i: int) -> Request: ...
    @overload
    def __getitem__(self, i: slice) -> list[Request]: ...
    def __getitem__(self, i: int | slice) -> Request | list[Request]:
        if isinstance(i, slice):
            return [f.req for f in self._flights[i]]
        return self._flights[i].req
