"""A prefill and a decode engine of one release, wired as NIXL would wire them, and the
events a walk can make happen to them.

Each method is one event of the model (``model/handoff/rules/``) applied to the real
code: the schedulers decide allocation, parking in ``WAITING_FOR_REMOTE_KVS``, frees and
aborts; the workers decide what finished, failed or expired; the walk only chooses what the
environment does (a READ or WRITE posted, landed or failed, a notification delivered, a
heartbeat delivered, time passing).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from kvproof.checker.conform.vllm.agent import FakeNixlAgent
from kvproof.checker.conform.vllm.clock import Clock, install
from kvproof.checker.conform.vllm.config import EngineSettings
from kvproof.checker.conform.vllm.scheduler import SchedulerSide
from kvproof.checker.conform.vllm.worker import build_worker, forward_notifs

LEASE = 30  # nixl/base_scheduler.py: get_from_extra_config("kv_lease_duration", 30)
DECODE_TOKENS = 1000


class Pair:
    """Prefill and decode of one release: two real schedulers, two real workers, two fake
    agents, one clock. Requests are named ``r0``, ``r1``, ... as the model's."""

    def __init__(
        self,
        mods: dict[str, Any],
        mode: str,
        policy: str | None = None,
        extra: tuple[tuple[str, Any], ...] = (),
        config: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        self.mode = mode
        self.clock = Clock()
        install(mods, self.clock)
        lease = int(dict(extra).get("kv_lease_duration", LEASE))
        self.lease = lease
        self.p = SchedulerSide(mods, EngineSettings(mode, "kv_producer", None, extra, config))
        self.d = SchedulerSide(mods, EngineSettings(mode, "kv_consumer", policy, extra, config))
        self.p_agent, self.d_agent = FakeNixlAgent("prefill"), FakeNixlAgent("decode")
        self.pw = build_worker(mods, mode, self.p_agent, lease)
        self.dw = build_worker(mods, mode, self.d_agent, lease)
        self.reserved: dict[str, set[int]] = defaultdict(set)  # the walk's page choices
        self.aborted: set[str] = set()  # the client got an abort or an error
        self.d_req: dict[str, Any] = {}  # decode's Request objects (status outlives the free)
        self.params: dict[str, dict[str, Any]] = {}
        self.handles: dict[tuple[str, int], int] = {}  # (request, page) -> handle
        self.in_d: set[str] = set()
        self.ran: set[str] = set()  # decode requests the scheduler ran (committed)
        self.received: set[str] = set()  # decode reported finished_recving
        self.src_freed_early: set[str] = set()  # prefill freed while a read/write needed it
        self.src_freed_inflight: set[str] = set()  # ... with a READ/WRITE of it in flight
        # Requests whose transfer the walk failed: the agent then reports ERR, and whether
        # a failed op still touches memory is not the code's to know, so a later free is
        # not judged in flight on either side (walk.py leaves the model's out too).
        self.failed: set[str] = set()
        self.stray: set[int] = set()  # pages a write landed on after decode freed them
        self.heartbeats: list[str] = []  # HB messages decode's scheduler packaged
        self.decisions: Counter[str] = Counter()

    # -- engine steps: schedule, hand the metadata to the worker, poll the worker -----------
    def step_p(self) -> None:
        held = {r for r in self.params if self.p.blocks(r)}
        if self.mode == "push":
            forward_notifs(self.pw, self.p_agent)
        res = self.pw.get_transfer_results()
        out, eco = self.p.step(finished_sending=set(res.finished_sending))
        self.pw.start_load_kv(out.kv_connector_metadata)
        for o in (x for outs in eco.values() for x in outs.outputs):
            if o.kv_transfer_params:
                self.params[o.request_id] = o.kv_transfer_params
        self.decisions.update(f"prefill finished_sending {r}" for r in res.finished_sending)
        for r in held:
            if not self.p.blocks(r):
                self._prefill_freed(r)

    def _prefill_freed(self, r: str) -> None:
        self.decisions["prefill freed source blocks"] += 1
        if r not in self.received:
            self.src_freed_early.add(r)
        agent = self.p_agent if self.mode == "push" else self.d_agent
        handles = [h for (q, p), h in self.handles.items() if q == r and p >= 0]
        if r not in self.failed and agent.in_flight(handles):
            self.src_freed_inflight.add(r)

    def step_d(self) -> None:
        if self.mode == "push":
            forward_notifs(self.dw, self.d_agent)
        res = self.dw.get_transfer_results()
        kv: dict[str, Any] = {
            "finished_recving": set(res.finished_recving),
            "failed_recving": set(res.failed_recving),
        }
        invalid = self.dw.get_block_ids_with_load_errors()  # base_worker.py, real
        if invalid:
            kv["invalid_block_ids"] = invalid
            self.decisions["decode invalid_block_ids"] += 1
        for r in res.finished_recving - res.failed_recving:
            self.received.add(r)
            if self.mode == "pull":  # the READ's notification reaches prefill with it
                self.p_agent.deliver("decode", f"{r}:1")
        self.decisions.update(f"decode failed_recving {r}" for r in res.failed_recving)
        out, _ = self.d.step(**kv)
        self.dw.start_load_kv(out.kv_connector_metadata)
        hb = getattr(out.kv_connector_metadata, "heartbeat_by_engine", None) or {}
        self.heartbeats += [",".join(sorted(i.req_ids)) for i in hb.values() if i.req_ids]
        for r in self.in_d:
            status = self.d_req[r].status.name
            if status == "RUNNING":
                self.ran.add(r)
            elif status in ("FINISHED_ERROR", "FINISHED_ABORTED") and r not in self.ran:
                self.aborted.add(r)

    def settle(self) -> None:
        """One engine step on each side: what the code decides on its own."""
        self.step_d()
        self.step_p()

    # -- the model's events -------------------------------------------------------------
    def arrive(self, r: str) -> None:
        """Prefill runs the prompt (``max_tokens=1``); its ``request_finished`` holds the
        blocks under a lease and returns decode's ``kv_transfer_params``."""
        self.p.add(r, {"do_remote_decode": True}, 1)
        self.step_p()
        self.step_p()  # the next schedule() hands the lease (reqs_to_send) to the worker

    def alloc(self, r: str, page: int) -> None:
        """Decode's preallocation of one page: vLLM allocates every block at once in the
        ``schedule()`` that parks the request (``send``); the page is the walk's name for
        one of them."""
        self.reserved[r].add(page)

    def send(self, r: str) -> None:
        """Decode admits the request: the scheduler allocates and parks it."""
        if r in self.in_d:
            return
        self.in_d.add(r)
        # Decode generates until the model's ``finish`` (never on its own in a walk).
        self.d.add(r, dict(self.params[r]), DECODE_TOKENS)
        self.d_req[r] = self.d.sched.requests[r]
        self.step_d()
        if self.mode == "pull" and r in self.dw.posted:
            self.post(r, -1)  # the READ start_load_kv posts (_read_blocks_for_req)

    def post(self, r: str, page: int) -> None:
        agent = self.p_agent if self.mode == "push" else self.d_agent
        handle = agent.post()
        self.handles[(r, page)] = handle
        if self.mode == "push":
            self.pw._sending_transfers[r].append(handle)
        else:
            self.dw._recving_transfers[r].append(handle)

    def land(self, r: str, page: int) -> None:
        agent = self.p_agent if self.mode == "push" else self.d_agent
        agent.land(self.handles[(r, page)])
        if r in self.in_d and not self.d.blocks(r):
            self.stray.add(page)

    def done(self, r: str) -> None:
        """The sender concludes: pull, decode's READs are polled; push, the WRITEs'
        completion notification reaches decode."""
        if self.mode == "push":
            self.d_agent.deliver("prefill", f"{r}:1")
        else:  # every READ landed, the one start_load_kv posted included
            self._land_all(r)
        self.settle()
        self.settle()  # the scheduler promotes a received request on its next step

    def fail(self, r: str) -> None:
        self.failed.add(r)
        agent = self.p_agent if self.mode == "push" else self.d_agent
        posted = sorted(
            ((p, h) for (q, p), h in self.handles.items() if q == r),
            key=lambda ph: ph[0] < 0,  # a READ the walk posted fails first
        )
        open_ = [h for _, h in posted if agent.states[h] == "PROC"]
        if open_:
            agent.fail(open_[0])
        elif self.mode == "pull":  # no READ posted: the handshake failed
            self.dw._failed_recv_reqs.put(r)
        self.settle()

    def abort(self, r: str) -> None:
        """The client disconnects: ``finish_requests(..., FINISHED_ABORTED)`` in whatever
        status the request is (not yet scheduled, waiting for remote KV, running)."""
        if r not in self.ran:  # a client already answered keeps its 200
            self.aborted.add(r)
        if r in self.in_d:
            self.d.abort(r)
        else:
            self.reserved.pop(r, None)  # never scheduled: nothing was allocated
        self.settle()

    def pages(self, r: str) -> frozenset[int]:
        """The decode pages the request holds, in the walk's names: its reserved pages
        while the scheduler holds blocks for it (or has yet to schedule it)."""
        if r in self.in_d:
            return frozenset(self.reserved[r]) if self.d.blocks(r) else frozenset()
        return frozenset(self.reserved.get(r, ()))

    def drain(self, r: str) -> None:
        """Pull: decode's own READs drain (the one ``start_load_kv`` posted included)."""
        self._land_all(r)
        self.settle()

    def _land_all(self, r: str) -> None:
        for (q, _), h in self.handles.items():
            if q == r and self.d_agent.states[h] == "PROC":
                self.d_agent.land(h)

    def finish(self, r: str) -> None:
        """Decode's request stops (``finish_requests`` with ``FINISHED_STOPPED``)."""
        self.d.sched.finish_requests(r, self.d.status_cls.FINISHED_STOPPED)
        self.settle()

    def p_abort(self, r: str) -> None:
        """An abort reaching prefill: its request already finished (``max_tokens=1``)."""
        self.p.abort(r)
        self.step_p()

    def expire(self, r: str) -> None:
        self.stall_until(self.pw._reqs_to_send.get(r))

    def heartbeat(self) -> None:
        """Decode's packaged heartbeat reaches prefill (``_handle_heartbeat``)."""
        msg = self.heartbeats.pop(0)
        self.p_agent.deliver("decode", f"HB:{msg}")
        self.step_p()

    def heartbeating(self) -> set[str]:
        """Prefill's requests decode's scheduler sends lease-renewal heartbeats for
        (``nixl/base_scheduler.py``: from ``on_new_request`` until ``_stop_heartbeat``)."""
        return {remote for _, remote in self.d.connector._heartbeat_req_engine.values()}

    def beat_times(self) -> list[float]:
        """How far time may pass with heartbeats delivered: one lease duration, while
        decode heartbeats a lease prefill holds, cut short before the deadline of any lease
        no heartbeat renews; at least one heartbeat interval, else none. Whether a renewed
        lease lasts is the code's to decide."""
        beating = self.heartbeating() & set(self.pw._reqs_to_send)
        if not beating:
            return []
        others = [t for r, t in self.pw._reqs_to_send.items() if r not in beating]
        when = min([self.clock.now + self.lease, *(t - 1 for t in others)])
        return [when] if when >= self.clock.now + self.d.connector._heartbeat_interval else []

    def beat_until(self, when: float) -> None:
        """Time passes to ``when`` one heartbeat interval at a time: decode's scheduler
        packages its heartbeats (throttled by ``_heartbeat_interval``) and each reaches
        prefill (``_get_new_notifs`` -> ``_handle_heartbeat``) in prefill's next pass."""
        self.heartbeats.clear()  # packaged earlier and never delivered: lost
        interval = self.d.connector._heartbeat_interval
        while self.clock.now < when:
            self.clock.jump_to(min(when, self.clock.now + interval))
            self.step_d()
            for msg in self.heartbeats:
                self.p_agent.deliver("decode", f"HB:{msg}")
            self.heartbeats.clear()
            before = dict(self.pw._reqs_to_send)
            self.step_p()
            # The code's decision: a deadline its _handle_heartbeat moved (no " r" in the
            # name: harness.decisions() strips a request suffix " rN").
            after = self.pw._reqs_to_send
            self.decisions["leases a heartbeat extended"] += sum(
                1 for r, t in before.items() if after.get(r, t) > t
            )

    def stall_until(self, when: float | None) -> None:
        """Time passes past a deadline the code stamped, with no heartbeat delivered."""
        if when is not None:
            self.clock.jump_to(when)
        self.settle()

    def deadlines(self) -> list[float]:
        return sorted(t for t in self.pw._reqs_to_send.values() if t > self.clock.now)

    def replay(self, steps: int) -> int:
        """The lasso's loop on the real scheduler: ``steps`` more engine steps on both
        sides, each past every deadline the code holds; how many decode still holds."""
        for _ in range(steps):
            self.clock.jump_to(self.clock.now + 10 * self.lease)
            self.settle()
        return sum(1 for r in self.in_d if self.d.blocks(r))
