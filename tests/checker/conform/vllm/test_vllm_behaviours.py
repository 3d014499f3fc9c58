"""The three open behaviours of vLLM 0.34.0, on its own scheduler and workers (issue 40):
each assertion is a decision the release's code makes, with the walk only choosing what the
environment does (a WRITE or READ posted, time passing, no heartbeat)."""

from __future__ import annotations

from kvproof.checker.conform.vllm.pair import Pair


def test_push_abort_waiting_for_kv_that_never_comes_holds_blocks_forever(vllm_mods) -> None:
    """#46283: decode aborts while WAITING_FOR_REMOTE_KVS and prefill never writes; the
    scheduler keeps the blocks (_aborted_kv_loads) through any number of later steps."""
    p = Pair(vllm_mods, "push")
    p.arrive("r0")
    p.send("r0")
    assert p.d.status("r0") == "WAITING_FOR_REMOTE_KVS"
    held = p.d.blocks("r0")
    assert held
    p.abort("r0")
    assert p.replay(20) == 1  # each step past every deadline the code holds
    assert p.d.blocks("r0") == held
    assert "r0" in p.d.sched._aborted_kv_loads


def test_push_lease_expiry_frees_source_under_an_inflight_write(vllm_mods) -> None:
    """push_worker.py::get_transfer_results: "Expired requests were already reported,
    even if their WRITEs finish later"."""
    p = Pair(vllm_mods, "push")
    p.arrive("r0")
    p.send("r0")
    p.post("r0", 0)
    assert p.p.blocks("r0")
    p.stall_until(p.deadlines()[0])
    assert not p.p.blocks("r0")
    assert "r0" in p.src_freed_early and "r0" in p.src_freed_inflight
    assert p.pw.xfer_stats.counts["record_kv_expired_req"] == 1


def test_pull_lease_expiry_before_the_read_is_only_logged(vllm_mods) -> None:
    """#21570: prefill frees at expiry; decode's late read completes, prefill only logs it
    (pull_worker.py::_get_new_notifs) and decode runs the request (the client gets 200)."""
    p = Pair(vllm_mods, "pull")
    p.arrive("r0")
    p.send("r0")
    p.post("r0", 0)
    p.stall_until(p.deadlines()[0])
    assert not p.p.blocks("r0") and "r0" in p.src_freed_early
    p.land("r0", 0)
    p.done("r0")
    assert p.pw.xfer_stats.counts["record_notification_after_expiry"] == 1
    assert "r0" in p.ran


def test_a_heartbeat_extends_the_lease(vllm_mods) -> None:
    """base_worker.py::_handle_heartbeat: a delivered heartbeat moves the deadline by
    kv_lease_duration * 2 // 3 from now; without it the lease would have gone."""
    p = Pair(vllm_mods, "pull")
    p.arrive("r0")
    p.send("r0")
    first = p.deadlines()[0]
    p.clock.jump_to(first - 1)
    p.settle()
    assert p.heartbeats, "decode's scheduler packaged no heartbeat"
    p.heartbeat()
    assert p.pw._reqs_to_send["r0"] > first
    p.clock.jump_to(first + 1)
    p.settle()
    assert p.p.blocks("r0")


def test_pull_failure_is_reported_once_no_handle_is_outstanding(vllm_mods) -> None:
    """#56104: one READ fails while a sibling is in flight; the request fails (and its
    blocks go) only once the sibling ended; kv_load_failure_policy 'fail' ends it."""
    p = Pair(vllm_mods, "pull")
    p.arrive("r0")
    p.send("r0")
    p.post("r0", 0)
    p.post("r0", 1)
    p.fail("r0")
    assert p.d.blocks("r0"), "freed while a sibling READ was in flight"
    p.land("r0", 1)
    p.drain("r0")
    assert not p.d.blocks("r0")
    assert p.d_req["r0"].status.name == "FINISHED_ERROR"


def test_recompute_policy_reschedules_instead_of_failing(vllm_mods) -> None:
    p = Pair(vllm_mods, "pull", policy="recompute")
    p.arrive("r0")
    p.send("r0")
    p.fail("r0")
    p.settle()
    assert p.d_req["r0"].status.name != "FINISHED_ERROR"
    assert "r0" not in p.aborted


def test_abort_of_a_finished_prefill_request_changes_nothing(vllm_mods) -> None:
    """scheduler.py::finish_requests skips a finished request: prefill's lease stands."""
    p = Pair(vllm_mods, "push")
    p.arrive("r0")
    before = dict(p.pw._reqs_to_send)
    p.p_abort("r0")
    assert p.p.blocks("r0") and p.pw._reqs_to_send == before
