"""The transfer engine: RDMA writes (push, Mooncake-like) or reads (pull, NIXL-like).

What matters, and what is simulated faithfully:

* a posted transfer completes later, asynchronously, in an order the scheduler picks;
* there is **no cancel**: Mooncake cannot revoke a posted write, so an abort does not
  remove anything from ``in_flight``;
* a batch can report FAILED (``fail`` in the cluster) while sibling writes still land;
* a transfer moves whole pages of bytes, junk slots included, into whatever page the
  destination index names *now*: if decode freed and reallocated that page, the bytes
  land in another request's KV.

Push snapshots the source page at post time (prefill holds its pages until the transfer
drains); pull reads prefill's block at completion time, so a block that prefill reused
after its lease expired delivers someone else's KV (vLLM #52234). A push WRITE under a
lease (vLLM NIXL push) reads its source at completion too: the NIC reads the blocks while
the WRITE runs, and the lease may free them before it ends (``read_at_land``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvproof.refimpl.decode import DecodeNode
from kvproof.refimpl.pool import KVPool
from kvproof.refimpl.recorder import Recorder
from kvproof.refimpl.tags import NO_TAG


@dataclass
class Transfer:
    rid: int
    page: int  # destination (decode) page
    src: int  # source (prefill) page
    seq: int  # posting order
    data: torch.Tensor | None = None  # push: the bytes read at post time
    tag: int = NO_TAG  # the source page's owner tag, read with the bytes


class TransferEngine:
    def __init__(self, mode: str, record: Recorder, *, read_at_land: bool | None = None) -> None:
        self.mode = mode
        self.read_at_land = mode == "pull" if read_at_land is None else read_at_land
        self.record = record
        self.in_flight: dict[tuple[int, int], Transfer] = {}
        self._seq = 0
        self.landed = 0

    def post(self, rid: int, page: int, src: int, source: KVPool) -> Transfer:
        t = Transfer(rid, page, src, self._seq)
        self._seq += 1
        if not self.read_at_land:
            self._read_source(t, source)
        self.in_flight[(rid, page)] = t
        return t

    def pending(self, rid: int) -> list[Transfer]:
        return [t for t in self.in_flight.values() if t.rid == rid]

    def oldest(self) -> Transfer | None:
        return next(iter(self.in_flight.values()), None)

    def land(self, rid: int, page: int, source: KVPool, decode: DecodeNode) -> Transfer:
        t = self.in_flight.pop((rid, page))
        if self.read_at_land:  # the read sees the block as it is now
            self._read_source(t, source)
        assert t.data is not None
        decode.receive(page, t.data, t.tag)  # the tag travels with the bytes
        self.record.landed(t.seq, page, rid, decode.alloc.owner.get(page))
        self.landed += 1
        return t

    def _read_source(self, t: Transfer, source: KVPool) -> None:
        t.data, t.tag = source.snapshot(t.src), source.tags.tag_at(t.src)
        self.record.carried(t.seq, t.src)
