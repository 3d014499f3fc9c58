"""The engine task: one worker thread owns the ``Cluster`` and steps it for every request.

HTTP handlers never touch the engine: they ``submit`` a ``Ticket`` and read its updates
from an asyncio queue; a client that goes away calls ``abort``, which becomes the engine's
``abort`` event (spec/handoff.md E12) at the next step. Requests are admitted while
decode's pools can hold their reservations (admission control, as a router in front of a
real deployment does; the rest wait in this queue, not in the engine's), then their events
interleave, one at a time, in the engine scheduler's order: continuous batching.

Timed events (``_due``) are what make a disconnect land where it does in a real deployment:
prefill's forward pass takes ``prefill_us_per_token`` per prefilled token, each posted write
``transfer_us_per_page`` to land, and prefill hears of an abort only between its forward
passes. A reservation goes back to admission as soon as the engine frees decode's pages
(never later, or the runner would defer release for every variant).

Status codes come from the engine only; this module adds no check of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.stepper import Policy, live_enabled
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.tokenizer import encode
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class Update:
    """What a client learns after an engine step: new tokens, or the end."""

    tokens: tuple[int, ...]
    final: bool
    status: int | str | None  # 200 / 400 / 500 / "aborted"
    reason: str = ""
    text: str = ""  # the whole answer, on the final update of a 200


@dataclass(eq=False)
class Ticket:
    tenant: str
    tokens: list[int]
    max_new_tokens: int
    loop: asyncio.AbstractEventLoop
    updates: asyncio.Queue[Update] = field(default_factory=asyncio.Queue)
    rid: int | None = None
    sent: int = 0  # tokens already handed out
    final: bool = False  # set by the engine thread once the last update is queued
    cancelled: bool = False  # the client went away


@dataclass(frozen=True)
class EngineStats:
    variant: str
    page_size: int
    decode_pages: int
    decode_pages_in_use: int
    prefill_pages: int
    prefill_pages_in_use: int
    transfers_in_flight: int
    requests_live: int
    requests_waiting: int
    responses: dict[str, int]  # "200" / "400" / "500" / "aborted" -> count
    guard_trips: int
    events: int
    # Oracle (ghost) counters: ground truth of the reference engine, never read by it.
    stray_writes: int  # RDMA writes that landed in a page their request did not own
    stale_reads: int  # 200 answers whose decode read a page not holding its own KV


def _pages(tokens: int, page_size: int) -> int:
    return -(-tokens // page_size)


class EngineRunner:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.cluster = c = Cluster(config.variant, sizes=config.sizes, seed=config.seed)
        self.policy = Policy(c)
        n = c.counts()
        self._prefill_pages = n.prefill_free
        self._caps = (n.decode_pages, n.tail_free)  # prompt pages, tail
        self._lock = threading.Lock()  # held while the engine steps or is read
        self._inbox: queue.SimpleQueue[tuple[str, Ticket]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stop = False
        self._waiting: deque[Ticket] = deque()
        self._aborts: list[Ticket] = []
        self._live: dict[int, Ticket] = {}
        self._need: dict[int, tuple[int, int]] = {}  # rid -> its reservation, until freed
        self._used = [0, 0]
        self._arrived_at: dict[int, float] = {}
        self._posted_at: dict[tuple[int, int], float] = {}
        self._read_at: dict[int, float] = {}  # rid -> its last decode read (commit, step)
        self._responses: Counter[str] = Counter()
        self._guard_trips = 0
        self._stray = 0
        self._stale = 0
        self._thread = threading.Thread(target=self._loop, name="kvproof-engine", daemon=True)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=10)

    # -- called from the event loop ----------------------------------------------------------
    def submit(self, tenant: str, prompt: str | list[int], max_new_tokens: int) -> Ticket:
        tokens = encode(prompt) if isinstance(prompt, str) else list(prompt)
        ticket = Ticket(tenant, tokens, max_new_tokens, asyncio.get_running_loop())
        self._inbox.put(("submit", ticket))
        self._wake.set()
        return ticket

    def abort(self, ticket: Ticket) -> None:
        """The client went away: abort the request in the engine (idempotent)."""
        if not ticket.final:
            self._inbox.put(("abort", ticket))
            self._wake.set()

    def stats(self) -> EngineStats:
        with self._lock:
            c = self.cluster
            n = c.counts()
            return EngineStats(
                variant=c.variant.name,
                page_size=c.sizes.page_size,
                decode_pages=n.decode_pages,
                decode_pages_in_use=n.decode_pages - n.decode_free,
                prefill_pages=self._prefill_pages,
                prefill_pages_in_use=self._prefill_pages - n.prefill_free,
                transfers_in_flight=len(c.in_flight()),
                requests_live=len(self._live),
                requests_waiting=len(self._waiting),
                responses=dict(self._responses),
                guard_trips=self._guard_trips,
                events=len(c.events),
                stray_writes=self._stray,
                stale_reads=self._stale,
            )

    # -- the engine thread -------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop:
            self._drain_inbox()
            with self._lock:
                wake = self._step()
            if wake is None:
                continue  # an event was applied: take the next one
            self._wake.wait(timeout=max(0.0, min(wake, 0.5)))
            self._wake.clear()

    def _drain_inbox(self) -> None:
        while True:
            try:
                kind, ticket = self._inbox.get_nowait()
            except queue.Empty:
                return
            if kind == "submit":
                self._waiting.append(ticket)
            else:
                self._aborts.append(ticket)

    def _step(self) -> float | None:
        """Apply one event; else return how long to wait for the next timed one."""
        self._admit()
        self._apply_aborts()
        now = time.monotonic()
        enabled = live_enabled(self.cluster, self._live)
        ready, wake = [], None
        for ev in enabled:
            due = self._due(ev)
            if due <= now:
                ready.append(ev)
            else:
                wake = due if wake is None else min(wake, due)
        # The pass's writes are posted before prefill polls (see _due): abort_seen waits.
        posting = {ev.rid for ev in ready if ev.name == "post"}
        ready = [ev for ev in ready if ev.name != "abort_seen" or ev.rid not in posting]
        chosen = self.policy.progress(ready)
        if chosen is None and wake is None and ready:
            chosen = self.policy.environment(ready)
        if chosen is not None:
            self._apply(chosen, now)
            if self.cluster.status(chosen.rid).decode == "done":
                rest = live_enabled(self.cluster, [chosen.rid])
                if not any(e.rid == chosen.rid for e in rest):
                    self._retire([chosen.rid])
            return None
        self._retire([r for r in self._live if not any(e.rid == r for e in enabled)])
        return 0.5 if wake is None else wake - now

    def _due(self, ev: Event) -> float:
        """When a timed event may happen (simulation knobs of ``ServeConfig``)."""
        cfg = self.config
        if ev.name == "post":
            return self._prefill_done_at(ev.rid)
        if ev.name == "land":
            assert ev.page is not None
            return self._posted_at.get((ev.rid, ev.page), 0.0) + cfg.transfer_us_per_page / 1e6
        if ev.name == "step":
            return self._read_at.get(ev.rid, 0.0) + cfg.decode_us_per_token / 1e6
        if ev.name == "abort_seen" and self._forward_running(ev.rid):
            # Prefill polls a room's status only between forward passes: SGLang's
            # event_loop_normal_disagg_prefill runs the batch, sends its KV
            # (process_batch_result_disagg_prefill -> send_kv_chunk), and only then polls
            # (process_disagg_prefill_inflight_queue sees KVPoll.Failed). A forward pass
            # running when decode aborted still posts its writes, to the indices decode
            # just freed: the late write of #24527/#35049 (the model's isolation trace
            # posts after the abort too; spec E13: P posts until it processes the ABORT).
            # Hearing of the abort at once, as this runner used to, meant prefill never
            # posted after an abort. Not confirmed: whether a Mooncake sender drops the
            # chunks of a room decode already marked Failed (the source was not checked).
            return self._prefill_done_at(ev.rid)
        return 0.0

    def _prefill_done_at(self, rid: int) -> float:
        prefilled = self.cluster.status(rid).prefilled  # 1 for the placeholder
        return self._arrived_at[rid] + prefilled * self.config.prefill_us_per_token / 1e6

    def _forward_running(self, rid: int) -> bool:
        """Prefill is sending ``rid`` and has pages of it still to post."""
        c = self.cluster
        if c.status(rid).prefill != "active":
            return False
        return not set(c.targets(rid)) <= set(c.pages_of(rid).posted)

    def _admit(self) -> None:
        c = self.cluster
        ps = c.sizes.page_size
        while self._waiting:
            t = self._waiting[0]
            n = len(t.tokens)
            # Decode's pages only: decode preallocates for a request while prefill is still
            # busy with others (SGLang: PreallocQueue on decode, PrefillAdder on prefill, two
            # pools admitted apart); the engine's prefill waits for its own pool
            # (``can_compute``). Reserving prefill's pool here too kept every other request
            # out while prefill computed an aborted one: none could own its freed pages
            # before the late write landed.
            need = (
                _pages(n, ps) + (1 if c.variant.switches.decode_reserve == "plus_one" else 0),
                _pages(t.max_new_tokens + ps, ps) + 1,
            )
            fits = all(u + k <= cap for u, k, cap in zip(self._used, need, self._caps, strict=True))
            if self._live and not fits:
                return
            self._waiting.popleft()
            try:
                rid = c.submit(t.tenant, t.tokens, t.max_new_tokens)
            except KvproofInputError as exc:
                self._push(t, Update((), True, 400, exc.message))
                continue
            t.rid = rid
            self._live[rid] = t
            self._need[rid] = need
            self._used = [u + k for u, k in zip(self._used, need, strict=True)]

    def _apply_aborts(self) -> None:
        c, keep = self.cluster, []
        for t in self._aborts:
            if t.final:
                continue
            if t.rid is None:
                if t in self._waiting:
                    self._waiting.remove(t)
                    self._push(t, Update((), True, "aborted", "client disconnected"))
                    self._responses["aborted"] += 1
                continue
            t.cancelled = True
            ev = Event("abort", t.rid)
            if c.can(ev):
                self._apply(ev, time.monotonic())
            elif not c.status(t.rid).arrived:
                keep.append(t)  # arrive first, then abort
        self._aborts = keep

    def _apply(self, ev: Event, now: float) -> None:
        c = self.cluster
        if ev.name == "land":
            assert ev.page is not None
            self._posted_at.pop((ev.rid, ev.page), None)
        c.apply(ev)
        if ev.name == "arrive":
            self._arrived_at[ev.rid] = now
        elif ev.name == "post":
            assert ev.page is not None
            self._posted_at[(ev.rid, ev.page)] = now
        elif ev.name in ("commit", "step"):
            self._read_at[ev.rid] = now
        elif ev.name == "land" and ev.page is not None and c.owner(ev.page) != ev.rid:
            self._stray += 1  # invariant 2 (no_stray_write) broken: oracle counter
        self._notify(ev.rid)
        self._unreserve()

    def _unreserve(self) -> None:
        """Give admission back the reservations whose pages decode has released.

        Holding them until the request retires (after its last write landed) deferred
        release in the runner, for every variant: on an early-free engine the next request
        was admitted only after the late write had landed, so it never got the page the
        write hit. SGLang's decode preallocates "once there is available kv"
        (disaggregation/decode.py, PreallocQueue): the allocator's free pages, which an
        early free returns at once.
        """
        c = self.cluster
        for rid in [r for r in self._need if c.status(r).decode == "done"]:
            need = self._need.pop(rid)
            self._used = [u - k for u, k in zip(self._used, need, strict=True)]

    def _notify(self, rid: int) -> None:
        t = self._live.get(rid)
        if t is None or t.final:
            return
        c = self.cluster
        resp = c.response(rid)
        if resp.status is None:
            return
        if resp.status != 200:
            self._guard_trips += c.status(rid).guard_trips
            self._push(t, Update((), True, resp.status, resp.reason))
        else:
            new = resp.tokens[t.sent :]
            done = c.status(rid).decode in ("done", "draining")
            if not new and not done:
                return
            t.sent = len(resp.tokens)
            self._push(t, Update(new, done, 200, resp.reason, resp.text if done else ""))
            if not done:
                return
            self._stale += int(c.truth.read_stale(rid))
        self._responses["aborted" if t.cancelled else str(resp.status)] += 1

    def _push(self, t: Ticket, update: Update) -> None:
        t.final = update.final
        # RuntimeError: the server's loop is gone (shutdown): nobody is listening.
        with contextlib.suppress(RuntimeError):
            t.loop.call_soon_threadsafe(t.updates.put_nowait, update)

    def _retire(self, rids: list[int]) -> None:
        """Forget requests with nothing left to do: their pool reservation is free again."""
        for r in rids:
            if r not in self._live or self.cluster.status(r).decode != "done":
                continue
            t = self._live.pop(r)
            if not t.final:  # e.g. aborted while running: tell the (gone) client anyway
                self._push(t, Update((), True, "aborted", "client disconnected"))
                self._responses["aborted"] += 1
            need = self._need.pop(r, None)  # None: returned already (_unreserve)
            if need is not None:
                self._used = [u - k for u, k in zip(self._used, need, strict=True)]
            self._arrived_at.pop(r, None)
            self._read_at.pop(r, None)
