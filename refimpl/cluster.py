"""The cluster: router + one prefill node + one decode node + the transfer engine.

An event-driven state machine whose events are the protocol's vocabulary
(``spec/handoff.md``). ``enabled()`` lists what could happen now, ``apply()`` performs
exactly one event (replay forces the nondeterminism: which page ``alloc`` takes, which
write ``land`` completes), ``run()`` lets the seeded scheduler pick, with faults.

    c = Cluster(load_variant("sglang-0.5.19-pd"))
    rid = c.submit("tenant-a", "hello")
    c.run()
    c.response(rid).status, c.response(rid).text
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Literal

import torch

from kvproof.refimpl.decode import DecodeNode
from kvproof.refimpl.enabled import Alloc, EnabledEvents
from kvproof.refimpl.errors import EngineRefused
from kvproof.refimpl.events import Event
from kvproof.refimpl.faults import NO_FAULTS, FaultPlan
from kvproof.refimpl.flight import Flight, FlightPages, FlightStatus, Requests
from kvproof.refimpl.handoff import Handoff
from kvproof.refimpl.limits import Limits
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.models import build_model
from kvproof.refimpl.prefill import PrefillNode, PrefillReq
from kvproof.refimpl.recorder import Recorder
from kvproof.refimpl.router import HTTP_STATUS, Request, Response
from kvproof.refimpl.scheduler import run_until_quiet
from kvproof.refimpl.tokenizer import encode, render
from kvproof.refimpl.transfer import TransferEngine
from kvproof.refimpl.view import EngineView, PageView, PoolCounts, RequestView
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Sizes, Variant

FILLER = encode("the quick brown fox jumps over the lazy dog; ")

Side = Literal["prefill", "decode"]


class Cluster:
    def __init__(
        self,
        variant: Variant,
        *,
        sizes: Sizes | None = None,
        model: str | Model = "echo",
        seed: int = 0,
        device: str = "cpu",
        debug: bool = True,
        faults: FaultPlan | None = None,
        decode_pages: int | None = None,
        prefill_pages: int | None = None,
        tail_pages: int | None = None,
        chunk_size: int = 64,
    ) -> None:
        self.variant = variant
        self.sizes = sizes = sizes or variant.engine_sizes
        ps = sizes.page_size
        d_pages = decode_pages or sizes.decode_pool_tokens // ps
        p_pages = prefill_pages or sizes.prefill_pool_tokens // ps
        self.model = (
            build_model(model, seed=seed, device=device) if isinstance(model, str) else model
        )
        self.seed = seed
        self.device = device
        self.chunk_size = chunk_size
        tails = tail_pages if tail_pages is not None else d_pages + 64
        # Ground truth of the run: written by the engine, read by view() and the oracle.
        self.truth = Recorder.for_pools(p_pages, d_pages + tails)
        prefill = PrefillNode(
            self.model,
            num_pages=p_pages,
            page_size=ps,
            limits=Limits.derive(sizes.context_len, p_pages * ps, "prefill pool"),
            device=device,
            seed=seed + 100,
            debug=debug,
            chunk_size=chunk_size,
            record=self.truth,
            # #39500: prefill computes the checksum only with the option on its side.
            checksum=variant.switches.prefill_checksums,
        )
        decode = DecodeNode(
            self.model,
            num_pages=d_pages,
            tail_pages=tails,
            page_size=ps,
            limits=Limits.derive(sizes.context_len, d_pages * ps, "decode pool"),
            decode_reserve=variant.switches.decode_reserve,
            device=device,
            seed=seed + 200,
            debug=debug,
            record=self.truth,
            checksum=variant.switches.decode_checksums,
        )
        sw = variant.switches
        # A push WRITE under a lease reads its source while it runs (vLLM NIXL push).
        read_at_land = sw.transfer_mode == "pull" or sw.prefill_hold == "lease"
        transfer = TransferEngine(sw.transfer_mode, self.truth, read_at_land=read_at_land)
        self.handoff = Handoff(variant.switches, prefill, decode, transfer)
        self._enabled = EnabledEvents(self.handoff)
        self.prefill, self.decode = prefill, decode
        self.faults = faults or NO_FAULTS
        self.rng = random.Random(seed)
        self.events: list[Event] = []
        self.fault_log: list[tuple[str, Event]] = []  # what the scheduler injected, and where

    # -- clients ---------------------------------------------------------------------------
    def submit(self, tenant: str, prompt: str | list[int], max_new_tokens: int = 8) -> int:
        """Register a request; its ``arrive`` is an event like any other."""
        tokens = encode(prompt) if isinstance(prompt, str) else list(prompt)
        if not tokens:
            raise KvproofInputError("empty prompt", f"tenant {tenant}")
        if max_new_tokens < 1:
            raise KvproofInputError("max_new_tokens must be >= 1", f"tenant {tenant}")
        rid = len(self.handoff.flights)
        self.handoff.add(
            Flight(
                Request(rid, tenant, tuple(tokens), max_new_tokens),
                PrefillReq(rid, list(tokens)),
                self.decode.new_request(rid, len(tokens)),
            )
        )
        return rid

    def response(self, rid: int) -> Response:
        f = self.handoff.flights[rid]
        req = f.req
        tokens = tuple(f.d.tokens[: req.max_new_tokens]) if req.resp == "ok" else ()
        return Response(HTTP_STATUS[req.resp], tokens, render(list(tokens)), req.tenant, req.reason)

    @property
    def requests(self) -> Requests:
        """Every request submitted, by id (the router's records)."""
        return Requests(self.handoff.flights)

    # -- events ----------------------------------------------------------------------------
    def enabled(self, rids: Iterable[int] | None = None, *, alloc: Alloc = "every") -> list[Event]:
        """Every event the engine could perform now, environment events included: for
        each request in id order its own events (``alloc`` for every free page while it
        reserves), then each in-flight write's ``land``. Costs time in the live requests
        (and the output), not in every request ever submitted. ``rids``: only these
        requests' events (ascending); ``alloc="top"``: ``alloc`` only for the allocator's
        next page (``refimpl/enabled.py``)."""
        return self._enabled(self.handoff.live() if rids is None else rids, alloc)

    def can(self, event: Event) -> bool:
        """``event``'s guard holds now (its rule in ``refimpl/rules/``)."""
        return self.handoff.can(event)

    def apply(self, event: Event) -> None:
        if not self.handoff.can(event):
            raise EngineRefused(f"{event} is not enabled")
        self.handoff.do(event)
        self.events.append(event)

    def redeliver(self, event: Event) -> None:
        """A duplicate status message (done/ack) arrives: status only moves forward and the
        pages were already released, so the engine ignores it. Recorded, never logged as an
        event (it is not a step)."""
        self.fault_log.append(("duplicate", event))

    def run(self, max_events: int = 100_000) -> None:
        run_until_quiet(self, max_events)

    # -- observation -----------------------------------------------------------------------
    def view(self) -> EngineView:
        h, dec, truth = self.handoff, self.decode, self.truth.decode
        pages = tuple(
            PageView(
                page,
                dec.alloc.owner.get(page),
                truth.writer[page],
                truth.filled[page],
                truth.stray[page],
                truth.at_pos[page],
                page in dec.tree.key,
                self.truth.prefix_ok.get(page, False),
                page in self.truth.shared_write,
            )
            for page in range(dec.num_pages)
        )
        reqs = []
        for f in h.flights:
            req, p, d = f.req, f.p, f.d
            inflight = tuple(t.page for t in h.transfer.pending(req.rid))
            reqs.append(
                RequestView(
                    req.rid,
                    req.over_p,
                    req.over_d,
                    d.phase,
                    p.phase,
                    req.poll,
                    req.resp,
                    p.pend,
                    req.abort_msg,
                    p.src_ok,
                    tuple(page for page in d.table if page not in d.handed),
                    tuple(p.dst),
                    tuple(sorted(p.posted)),
                    inflight,
                    self.truth.read_stale(req.rid),
                    req.hit,
                    (*d.shared, *sorted(d.handed)),
                    p.dead,
                )
            )
        return EngineView(pages, tuple(reqs))

    # -- the read-only face (ops/serve, checker/conformance) --------------------------------
    def status(self, rid: int) -> FlightStatus:
        """Where request ``rid`` stands: phases, poll, response, token counts."""
        return self.handoff.flights[rid].status()

    def pages_of(self, rid: int) -> FlightPages:
        """Request ``rid``'s pages: prefill's, decode's table, the posted destinations."""
        return self.handoff.flights[rid].pages()

    def targets(self, rid: int) -> tuple[int, ...]:
        """The destination pages ``rid``'s sender writes, in position order."""
        return tuple(self.handoff.targets(self.handoff.flights[rid]))

    def in_flight(self, rid: int | None = None) -> tuple[tuple[int, int], ...]:
        """Writes posted and not landed, as (request, decode page), oldest first; only
        ``rid``'s when given."""
        writes = self.handoff.transfer.in_flight
        return tuple(k for k in writes if rid is None or k[0] == rid)

    @property
    def limits(self) -> tuple[Limits, Limits]:
        """(prefill, decode) admission limits."""
        return self.prefill.limits, self.decode.limits

    def counts(self) -> PoolCounts:
        """Pages per pool and how many are free now."""
        p, d = self.prefill.alloc, self.decode
        return PoolCounts(
            len(p.pages),
            p.free_count,
            d.num_pages,
            d.alloc.free_count,
            len(d.tail_alloc.pages),
            d.tail_alloc.free_count,
        )

    def is_free(self, side: Side, page: int) -> bool:
        """``page`` is free in ``side``'s allocator (a request may take it next)."""
        return self._node(side).alloc.is_free(page)

    def owner(self, page: int) -> int | None:
        """The request decode's allocator handed ``page`` to (None: free)."""
        return self.decode.alloc.owner.get(page)

    # -- the environment's face (conformance's replay) -------------------------------------
    # What a deployment or other traffic decides, set from outside between events; nothing
    # outside refimpl/ writes the nodes (tests/checker/conformance/test_engine_face.py).
    def set_limits(self, prefill: Limits, decode: Limits) -> None:
        """The deployment's admission limits, read by the next ``arrive``."""
        self.prefill.limits, self.decode.limits = prefill, decode

    def set_prefix_hit(self, pages: int) -> None:
        """The next ``arrive`` finds its first ``pages`` pages in decode's radix cache
        (issue 12 item 3; only with ``decode_prefix_cache``)."""
        self.decode.prefix_pages = pages

    def plant_kv(self, side: Side, tokens: list[int], start: int, table: Sequence[int]) -> None:
        """Other traffic's KV: ``tokens`` at positions ``start..`` through the page table
        ``table``, written into ``side``'s pool by the engine's own model (so the bytes a
        request reads next are the engine's, the way an earlier request left them)."""
        with torch.inference_mode():  # as the engine's own prefill writes its pool
            self.model.extend(self._node(side).pool, tokens, start, list(table), gen_index=0)

    def _node(self, side: Side) -> PrefillNode | DecodeNode:
        return self.prefill if side == "prefill" else self.decode

    def prompt_for_pages(
        self, k: int, over_prefill_limit: bool = False, over_decode_limit: bool = False
    ) -> list[int]:
        """A prompt whose decode reservation is ``k`` pages, over or within each side's
        limit as asked. Raises ``KvproofInputError`` when these sizes allow no such prompt
        (e.g. ``over_prefill_limit`` with a prefill pool as large as decode's)."""
        ps = self.sizes.page_size
        own = k - 1 if self.decode.decode_reserve == "plus_one" else k
        p_max = self.prefill.limits.max_req_input_len
        d_max = self.decode.limits.max_req_input_len
        for n in range(max(1, (own - 1) * ps + 1), own * ps + 1):
            if (n > p_max) == over_prefill_limit and (n > d_max) == over_decode_limit:
                return [FILLER[i % len(FILLER)] for i in range(n)]
        raise KvproofInputError(
            f"no prompt needs {k} pages with over_prefill={over_prefill_limit}, "
            f"over_decode={over_decode_limit} (page {ps}, prefill max {p_max}, decode max {d_max})",
            self.variant.name,
        )
