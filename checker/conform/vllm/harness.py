"""One walk's vLLM code for the conform core (``checker/conform/engine.py::Harness``): a
``Pair`` of real schedulers and workers, each model step applied as the event it names.

Model step -> what the code is asked (the code decides the rest):

- ``arrive``: prefill runs the prompt (``max_tokens=1``); ``request_finished`` stamps its
  lease. A prompt the model rejects on arrival never reaches the schedulers.
- ``alloc``: the walk's name for a block; ``send``: decode's ``schedule()`` allocates every
  block and parks the request in ``WAITING_FOR_REMOTE_KVS``.
- ``post``/``land``/``fail``: a READ (pull, decode's agent) or WRITE (push, prefill's
  agent) posted, landed, failed; ``done``: the sender concludes (pull: decode's worker
  polls its READs; push: the WRITEs' notification reaches decode).
- ``abort``: ``finish_requests(FINISHED_ABORTED)`` in any status; ``p_abort``: the same on
  prefill, whose request already finished; ``finish``: ``FINISHED_STOPPED``.
- ``expire``: the clock jumps past the lease prefill's scheduler stamped; ``ack``: pull,
  decode's own READs drain; push, the lasso's loop: ``REPLAY`` more engine steps on both
  sides, each past every deadline, for the scheduler to free the blocks.
- a stall: time passes past the next lease, with no heartbeat delivered (a fault);
- a beat: time passes one heartbeat interval and decode's heartbeats reach prefill, which
  renews the leases they name (not a fault: what a healthy pair does while decode waits).

``decided`` reports what the code did on its own: the scheduler ran the request
(``commit``), ended it on a failed load (``abort``), prefill's worker reaped the lease while
the transfer still needed the blocks (``source_expired``), decode freed an aborted
request's blocks (``freed``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from kvproof.checker.conform.engine import Decided, RequestSpec, Step, UpstreamRaised
from kvproof.checker.conform.projection import Projection, RequestView
from kvproof.checker.conform.vllm.pair import Pair
from kvproof.checker.upstream.raised import trace_text, upstream_raise
from kvproof.model.lang.instance import ActionInstance

REPLAY = 8  # engine steps the lasso's loop is replayed for on the real scheduler


def rid(r: int) -> str:
    return f"r{r}"


class VllmHarness:
    def __init__(self, pair: Pair, requests: tuple[RequestSpec, ...], root: Path) -> None:
        self.pair = pair
        self.requests = requests
        self.root = root  # the loaded ``vllm/`` folder: its exceptions are findings
        self.replayed: list[tuple[int, int]] = []  # (request, still held after REPLAY)

    def apply(self, step: Step) -> None:
        try:
            self._apply(step)
        except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
            self._found(exc)

    def _found(self, exc: Exception) -> None:
        """An exception whose innermost frame in the tree is the release's is a finding."""
        raised = upstream_raise(exc, self.root, 0, "")
        if raised is None:
            raise exc
        head = (
            f"vLLM's code raised {raised.exception} at {raised.file}:{raised.line} "
            f"({raised.function})"
        )
        raise UpstreamRaised(head, trace_text(exc)) from exc

    def _apply(self, step: Step) -> None:
        inst, p = step.inst, self.pair
        r = inst.args[0]
        name, act = rid(r), inst.action
        spec = self.requests[r]
        if act == "arrive":
            if not (spec.over_prefill or spec.over_decode):
                p.arrive(name)
        elif act in ("alloc", "post", "land"):
            getattr(p, act)(name, inst.args[1])
        elif act in ("send", "done", "fail", "abort", "p_abort", "expire", "finish"):
            getattr(p, act)(name)
        elif act == "ack" and p.mode == "pull":
            p.drain(name)
        elif act == "ack":
            held = p.replay(REPLAY)
            self.replayed.append((r, held))
        else:  # step, abort_seen (vLLM sends prefill no ABORT), radix steps
            p.settle()

    def decided(self, r: int) -> Decided:
        name, p = rid(r), self.pair
        return Decided(
            committed=name in p.ran,
            aborted=name in p.d_req and p.d_req[name].status.name == "FINISHED_ERROR",
            source_expired=name in p.src_freed_early,
            freed=name in p.aborted and name in p.in_d and not p.d.blocks(name),
        )

    def project(self) -> Projection:
        p = self.pair
        views = []
        for r in range(len(self.requests)):
            name = rid(r)
            views.append(
                RequestView(
                    pages=p.pages(name),
                    aborted=name in p.aborted,
                    committed=name in p.ran,
                    source=None if name not in p.params else _source(p, name),
                    source_freed_in_flight=name in p.src_freed_inflight,
                )
            )
        return Projection(tuple(views), frozenset(p.stray))

    def jump_target(self, inst: ActionInstance) -> float | None:
        if inst.action != "expire":
            return None
        return self.pair.pw._reqs_to_send.get(rid(inst.args[0]))

    def expiring(self, target: float, r: int) -> list[ActionInstance]:
        return [
            ActionInstance("expire", (int(q[1:]),))
            for q, t in self.pair.pw._reqs_to_send.items()
            if t <= target and q != rid(r)
        ]

    def stall_deadlines(self) -> list[float]:
        return self.pair.deadlines()

    def stall(self, when: float) -> None:
        try:
            self.pair.stall_until(when)
        except Exception as exc:  # as in ``apply``
            self._found(exc)

    def beats(self) -> list[float]:
        return self.pair.beat_times()

    def beat(self, when: float) -> None:
        try:
            self.pair.beat_until(when)
        except Exception as exc:  # as in ``apply``
            self._found(exc)

    def decisions(self) -> Mapping[str, int]:
        made: Counter[str] = Counter()
        for k, v in self.pair.decisions.items():
            made[k.rsplit(" r", 1)[0]] += v
        made.update(self.pair.pw.xfer_stats.counts)
        made.update(self.pair.dw.xfer_stats.counts)
        held = sum(1 for _, n in self.replayed if n)
        if held:
            made[f"blocks still held after {REPLAY} replayed engine steps"] += held
        return dict(made)


def _source(p: Pair, name: str) -> frozenset[int]:
    """Prefill's source blocks for the transfer: one abstract block, gone once prefill
    freed them before the transfer that needed them was over."""
    return frozenset() if name in p.src_freed_early else frozenset({0})
