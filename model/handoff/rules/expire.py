"""``expire(r)`` (E16), a clock: prefill's source blocks go back to prefill's pool before
the transfer is over, and what the transfer then carries.

``src_ok(r)`` says prefill's blocks still hold ``r``'s KV. A write (push) or read (pull)
that lands after it went off carries whatever reused the blocks (``rules/write.py``'s
``land``), so a transfer in flight when the blocks are freed is a stale read for decode.

- ``lease``, pull (vLLM NIXL, #52234): the blocks go back at lease expiry even if decode
  has not read them (``nixl/base_worker.py::_reap_expired_send_leases``); a late read is
  only logged (``nixl/pull_worker.py::_get_new_notifs``, "Potentially invalid KV blocks").
- ``lease``, push (vLLM NIXL push, 0.34.0): the expired request is reported
  finished_sending while its WRITE is in flight ("Expired requests were already reported,
  even if their WRITEs finish later", ``nixl/push_worker.py::get_transfer_results``), and
  the scheduler frees its blocks (``v1/core/sched/scheduler.py::
  _update_from_kv_xfer_finished``). A request with no WRITE posted yet is dropped from the
  writer's matching state (``_evict_finished_inbox``): prefill never writes it and never
  tells decode. One already posted completes, and its NIXL notification still reaches
  decode, which reads what the WRITE carried.
- ``early_free``, push (dynamo #826): prefill frees its source blocks between its writes.
"""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import no_inflight
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def expires(sw: Switches) -> bool:
    """The protocol has ``expire`` for these switches."""
    if sw.transfer_mode == "push":
        return sw.prefill_hold in ("lease", "early_free")
    return sw.prefill_hold == "lease"


def expire(sw: Switches, s: Ctx, r: Term) -> None:
    push = sw.transfer_mode == "push"
    s.require(s.src_ok(r))
    if push and sw.prefill_hold == "early_free":
        # The engine snapshots a push write's source when it is posted, so the free
        # falls between writes: every write posted after it carries reused blocks.
        s.require(s.eq(s.pphase(r), "active"))
        s.require(no_inflight(s, r))
    elif push:
        # The lease runs from prefill's request_finished until the WRITE completes
        # (pull_scheduler/push_scheduler.py::request_finished stamps it); posted
        # WRITEs may be in flight.
        s.require(s.isin(s.pphase(r), "waiting", "active"))
        posted = s.exists("Page", lambda p: s.posted(r, p))
        s.set("pphase", (r,), s.ite(posted, s.pphase(r), "stopped"))
    s.set("src_ok", (r,), False)
