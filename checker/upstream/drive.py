"""Map each model step to calls into the release's code: an interface much narrower than
``refimpl.Cluster`` (one decode rank, one prefill rank, the transfer queue and abort).

Per step (``ActionInstance`` of the handoff protocol):

| model step | into the release's code |
| --- | --- |
| ``arrive`` | the scheduler's ``DecodePreallocQueue.add``: retired or queued (``admission.py``) |
| ``alloc`` | the page recorder (``DecodePreallocQueue`` stands in) |
| ``send`` | the receiver's metadata published (``init_time``); ``DecodeTransferQueue.add`` |
| ``post``/``land`` | a write in flight / landed (stray if its writer lost the page) |
| ``done``/``fail`` | prefill's ranks conclude; decode takes their messages (``status.py``) |
| ``p_abort``/``abort_seen`` | prefill's ``sender.abort`` / its ABORT handling (``status.py``) |
| ``abort`` | ``Scheduler.abort_request`` (decode branch) |
| ``ack``, ``stale_ack`` | the manager's ``note_abort_ack`` (late: an earlier abort's) |
| ``timeout`` | the clock past the deferred-release deadline the code set |
| ``give_up`` | the clock past the receiver's waiting timeout |
| ``finish`` | the running batch frees (stand-in: not a decision module) |

What prefill reports and what decode then holds are the code's (``status.py``), compared as
``prefill_status`` and ``decode_status``.

After each step the scheduler's loop runs once: ``pop_transferred`` then
``resolve_deferred_releases`` (``decode.py::SchedulerDisaggregationDecodeMixin``); a
committed stub ends at its first step (``admission.first_step_ends``).
"""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any

from kvproof.checker.conform.engine import Decided, RequestSpec, Step
from kvproof.checker.conform.projection import Projection, RequestView
from kvproof.checker.upstream import admission, host, status, wire
from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.checker.upstream.clock import Clock
from kvproof.checker.upstream.pages import Pages
from kvproof.checker.upstream.raised import as_finding, sglang_root
from kvproof.checker.upstream.scheduler import scheduler_self
from kvproof.model.lang.instance import ActionInstance

DECODE = "sglang.srt.disaggregation.decode"
COMMON = "sglang.srt.disaggregation.common.conn"
BASE = "sglang.srt.disaggregation.base.conn"
SCHED = "sglang.srt.managers.scheduler"


class Harness(status.PrefillSteps):
    """One walk's worth of the release's decode side, fresh for every walk."""

    def __init__(
        self,
        mods: dict[str, ModuleType],
        adapter: Adapter,
        backend: type,
        receiver: type,
        disagg: Any = None,
        sender: type | None = None,
        requests: tuple[RequestSpec, ...] = (),
        over_long: Any = None,
        counts: Any = None,
    ) -> None:
        self.requests = requests
        self.over_long = over_long  # intake.Intake of an over-long prompt
        self.counts = counts  # over_prefill -> transfer.PageCounts
        self.mods = mods
        self.adapter = adapter
        self.root = sglang_root(mods)  # where an exception is the release's own
        self.decode = mods[DECODE]
        self.kvpoll = mods[BASE].KVPoll
        envs = mods["sglang.srt.environ"].envs
        self.clock = Clock()
        self.pages = Pages()
        self.outcome = host.Outcome()
        self.peer = wire.Peer()
        # 0.5.15-0.5.18 declare no deferred-release switch (``srt/environ.py``).
        switch = getattr(envs, "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE", None)
        deferred = adapter.deferred(bool(switch.get()) if switch is not None else False, backend)
        self.waiting_timeout = float(envs.SGLANG_DISAGGREGATION_WAITING_TIMEOUT.get())
        self.mgr = wire.make_manager(
            backend, deferred=deferred, waiting_timeout=self.waiting_timeout
        )
        patched: dict[str, Any] = dict(mods)  # the release's modules: foreign, patched
        for name in (DECODE, COMMON, "sglang.srt.disaggregation.mooncake.conn"):
            if name in patched:
                patched[name].time = self.clock
        host.patch_decode_module(
            self.decode, self.pages, self.outcome, self.clock, disagg or default_disagg()
        )
        patched[SCHED].release_kv_cache = self.decode.release_kv_cache
        patched[SCHED].prepare_abort = self.decode.prepare_abort
        patched[SCHED].get_parallel = self.decode.get_parallel
        patched[SCHED].get_disagg = self.decode.get_disagg
        # The release's Scheduler, without its __init__ (``scheduler.py``), is both the
        # ``self`` of ``abort_request`` and the queues' ``scheduler``, as in the server; the
        # scheduler module's own enum (a stand-in when utils.py is not loaded real).
        self.sched_self = scheduler_self(
            mods[SCHED].Scheduler,
            mods[SCHED].DisaggregationMode.DECODE,
            None,
            self.outcome,
            self.pages,
        )
        self.scheduler = self.sched_self
        self.queue = adapter.make_queue(
            self.decode,
            host.IndexAllocator(),
            host.MetadataBuffers(64),
            self.sched_self,
            self.sched_self.tree_cache,
        )
        self.queue._commit_transfer_to_req = self._commit  # metadata copy: not a decision
        object.__setattr__(self.sched_self, "disagg_decode_transfer_queue", self.queue)
        recv = admission.receivers(receiver, mods[COMMON].CommonKVReceiver, self.peer)
        self.prealloc = admission.prealloc_queue(
            mods, self.sched_self, self.mgr, self.queue, recv, disagg or default_disagg()
        )
        object.__setattr__(self.sched_self, "disagg_decode_prealloc_queue", self.prealloc)
        self.admitted: dict[int, str] = {}  # request -> what decode's admission did
        # Prefill's ranks: the backend's sender class unless the caller names one.
        sender = sender or mods["sglang.srt.disaggregation.mooncake.conn"].MooncakeKVSender
        self.prefill = status.PrefillRanks(mods, backend, sender, deferred)
        self.receivers: dict[int, Any] = {}
        self.dropped: set[int] = set()  # requests whose room the code's clear dropped
        self.entries: dict[int, Any] = {}  # request -> DecodeRequest
        self.running: set[int] = set()
        self.release_deadline: dict[int, float] = {}
        self.deferred = deferred
        self.holds = 0  # requests the code held for deferred release
        # request -> "k of n": released after only k of n prefill ranks ACKed
        self.partial_release: dict[int, str] = {}

    def decisions(self) -> dict[str, int]:
        """What the code decided in this walk, counted (a run that exercised nothing says so)."""
        return {
            "held": self.holds,
            "released": len(self.pages.released),
            "aborted": len(self.outcome.aborted),
            "committed": len(self.outcome.committed),
            "aborts_sent_to_prefill": len(self.peer.aborts),
        }

    # -- the core's view (``checker/conform/engine.py::Harness``) ------------------------
    def apply(self, step: Step | ActionInstance) -> None:
        """The model's step (``Step.reported`` is not read: prefill's code decides what it
        reports, ``status.py``). A bare instance: a scripted step (tests)."""
        try:
            self.take(step if isinstance(step, ActionInstance) else step.inst)
        except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
            self._found(exc)

    def decided(self, r: int) -> Decided:
        return Decided(
            committed=r in self.outcome.committed,
            aborted=r in self.outcome.aborted,
            waited_out=self.waiting_expired(r),
            release_due=self.release_expired(r),
        )

    def project(self) -> Projection:
        views = []
        for r, spec in enumerate(self.requests):
            # Pages reserved and sent: the release's counts for this request's prompt
            # (transfer.py), once it arrived and decode admitted it.
            counts = None
            if self.counts is not None and r in self.entries and not spec.over_decode:
                counts = self.counts[spec.over_prefill]
            views.append(
                RequestView(
                    self.pages.of(r),
                    r in self.outcome.aborted,
                    r in self.outcome.committed,
                    pages_sent_of_reserved=counts.relation if counts else None,
                    released_after_acks=self.partial_release.get(r),
                    prompt_tokens=counts.prompt_tokens if counts else None,
                    reserved=counts.reserved if counts else None,
                    sent=counts.sent if counts else None,
                    intake=self.intake_of(r),
                    decode_status=self.status_of(r),
                    prefill_status=self.prefill.status(1000 + r),
                    admission=self.admitted.get(r),
                )
            )
        return Projection(tuple(views), frozenset(self.pages.stray))

    def status_of(self, r: int) -> str | None:
        """The status decode's KV manager holds for r's room (``update_status``'s
        decisions, read as ``check_status`` reads it): "pending", "success" or "failed";
        None before arrival and from the step the receiver's ``clear`` dropped the room (a
        late status that re-creates it, as 0.5.15-0.5.19 let Success do, concerns a later
        request reusing the room: the model gives every request its own)."""
        if r not in self.receivers or r in self.dropped:
            return None
        status = self.mgr.request_status.get(1000 + r)
        if status is None:
            self.dropped.add(r)
            return None
        if status == self.kvpoll.Success:
            return "success"
        return "failed" if status == self.kvpoll.Failed else "pending"

    def intake_of(self, r: int) -> str | None:
        """Prefill's intake of an over-long prompt, once it arrived (``intake.py``: the
        same for every walk of a release)."""
        if self.over_long is None or r not in self.entries:
            return None
        if not self.requests[r].over_prefill:
            return None
        if self.over_long.retired:
            return "retired"
        return "stub" if self.over_long.queued_tokens == 1 else "queued"

    def stall_deadlines(self) -> list[float]:
        return sorted(
            d for r, d in self.release_deadline.items() if self.pages.of(r) and self.clock.now < d
        )

    def stall(self, when: float) -> None:
        self.clock.jump_to(when)
        try:
            self.tick()
        except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
            self._found(exc)

    def beats(self) -> list[float]:
        return []  # SGLang's heartbeats renew no hold; its waiting timeout is ``give_up``

    def beat(self, when: float) -> None:
        self.stall(when)

    def _found(self, exc: Exception) -> None:
        """An exception with a frame in the loaded ``sglang/`` tree is a finding."""
        finding = as_finding(exc, self.root)
        if finding is None:
            raise exc
        raise finding from exc

    # -- the model's steps ---------------------------------------------------------------
    def take(self, inst: ActionInstance) -> None:
        # Time passes only at the model's timeout/give_up (the model has no clock): holds
        # set between two jumps share a deadline, and a jump expires them together.
        r = inst.args[0]
        getattr(self, f"_{inst.action}", self._nothing)(r, *inst.args[1:])
        self.tick()

    def _nothing(self, r: int, *args: int) -> None:
        return None

    def _arrive(self, r: int) -> None:
        self.prefill_arrives(r)  # prefill takes the request whatever decode decides
        over = r < len(self.requests) and self.requests[r].over_decode  # decode's own limit
        entry = admission.admit(self.mods, self.sched_self, r, over)
        self.admitted[r] = admission.QUEUED if entry else admission.RETIRED
        if entry is None:  # retired at the door: no receiver, nothing to reserve
            return
        entry.metadata_buffer_index = r
        self.receivers[r] = entry.kv_receiver
        wire.handshake(entry.kv_receiver)
        self.entries[r] = entry

    def _alloc(self, r: int, p: int) -> None:
        self.pages.alloc(r, p)

    def _send(self, r: int) -> None:
        entry = self.entries[r]
        self.prealloc.queue.remove(entry)
        admission.give_row(entry.req, r)  # ``_pre_alloc``'s row: it holds KV now
        wire.publish(entry.kv_receiver, self.kvpoll.WaitingForInput, self.clock.time())
        self.queue.add(entry)
        self.prefill.bootstrapped(entry.req.bootstrap_room)
        self.prefill_forward(r)  # 0.5.20: an over-long prompt's stub is retired here

    def _post(self, r: int, p: int) -> None:
        self.pages.post(r, p)

    def _land(self, r: int, p: int) -> None:
        self.pages.land(r, p)

    def _done(self, r: int) -> None:
        self.prefill.conclude(1000 + r, failed=False)
        self.prefill.deliver(self.mgr)

    def _fail(self, r: int) -> None:
        self.prefill.conclude(1000 + r, failed=True)
        self.prefill.deliver(self.mgr)

    def _abort(self, r: int) -> None:
        if r in self.running:  # the running batch's abort: not a decision module (the
            self.running.discard(r)  # client already has its answer's status)
            self.pages.release(r)
            return
        recv_req = SimpleNamespace(rid=f"req-{r}", abort_all=False)
        self.mods[SCHED].Scheduler.abort_request(self.sched_self, recv_req)
        for q in admission.failed_in_prealloc(self.prealloc, self.kvpoll.Failed):
            self.pages.release(q)
            self.outcome.aborted.setdefault(q, "prealloc")

    def _ack(self, r: int) -> None:
        # One ABORT_ACK per prefill rank, one at a time: the model's ``ack`` is "every
        # rank drained", so the code must still hold the pages after a partial set.
        recv, held = self.receivers[r], self.pages.of(r)
        for n, rank in enumerate(wire.PREFILL_RANKS, start=1):
            self.adapter.note_ack(self.mods[COMMON], self.mgr, recv, rank)
            if n < len(wire.PREFILL_RANKS):
                self.tick()
                if held and not self.pages.of(r):
                    self.partial_release[r] = f"{n} of {len(wire.PREFILL_RANKS)}"
                    return

    def _stale_ack(self, r: int) -> None:
        wire.late_acks(self.adapter.note_stale_ack, self.mods[COMMON], self.mgr, self.receivers[r])

    def _timeout(self, r: int, timer: str = "timeout") -> None:
        target = self.jump_target(ActionInstance(timer, (r,)))
        if target is not None:
            self.clock.jump_to(target)

    def _give_up(self, r: int) -> None:
        self._timeout(r, "give_up")

    def jump_target(self, inst: ActionInstance) -> float | None:
        """The deadline the code set that the model's ``timeout``/``give_up`` passes."""
        r = inst.args[0]
        if inst.action == "timeout":
            return self.release_deadline.get(r)
        if inst.action == "give_up":
            recv = self.receivers.get(r)
            if recv is not None and recv.init_time is not None:
                return recv.init_time + self.waiting_timeout
        return None

    def expiring(self, target: float, r: int) -> list[ActionInstance]:
        """What else the clock at ``target`` expires: other requests' holds and waits.
        The model must be able to take each of them too, or the jump is not one of its
        walks (under ``bounded_transfer`` a hold cannot time out while prefill writes)."""
        out = []
        for q, deadline in self.release_deadline.items():
            if q != r and self.clock.now < deadline <= target + 0.001 and self.pages.of(q):
                out.append(ActionInstance("timeout", (q,)))
        for entry in self.queue.queue:
            q, recv = entry.req.r, entry.kv_receiver
            if q == r or recv.init_time is None:
                continue
            if self.clock.now < recv.init_time + self.waiting_timeout <= target + 0.001:
                out.append(ActionInstance("give_up", (q,)))
        return out

    def _finish(self, r: int) -> None:
        self.running.discard(r)
        self.pages.release(r)

    # -- the scheduler's loop ------------------------------------------------------------
    def tick(self) -> None:
        for req in self.queue.pop_transferred():
            self.running.add(req.r)
            if admission.first_step_ends(req):  # its reject was pending: the 400, freed
                self._finish(req.r)
        if not self.adapter.deferred_machinery:
            return
        self.queue.resolve_deferred_releases()
        for entry in self.queue._deferred_releases:
            deadline = entry[-3]  # (decode_req, [start,] deadline, idx, acks)
            if entry[0].req.r not in self.release_deadline:
                self.release_deadline[entry[0].req.r] = deadline
                self.holds += 1

    def _commit(self, decode_req: Any) -> None:
        self.outcome.committed.add(decode_req.req.r)
        decode_req.kv_receiver.clear()
        decode_req.kv_receiver = None

    def waiting_expired(self, r: int) -> bool:
        recv = self.receivers.get(r)
        return bool(
            recv
            and recv.init_time is not None
            and self.clock.now >= recv.init_time + self.waiting_timeout
        )

    def release_expired(self, r: int) -> bool:
        return r in self.release_deadline and self.clock.now >= self.release_deadline[r]


def default_disagg() -> Any:
    # ServerArgs' disaggregation fields the queues read (``get_disagg()``), when the caller
    # gives none: host-staged receive off (0.5.22: a threshold ``< 1`` enables it), early alloc.
    return SimpleNamespace(
        disaggregation_decode_allocation_policy="early",
        disaggregation_decode_host_receive_threshold=1.0,
        disaggregation_decode_retraction_backup=False,
        disaggregation_decode_enable_radix_cache=False,
    )
