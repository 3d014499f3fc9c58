"""Facts about the SGLang releases, asked of their own decode code (cached wheels; skips
offline). Each is a short scripted walk through ``Harness``, the same calls conform makes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kvproof.checker.upstream import fetch, settings
from kvproof.checker.upstream.adapters import select
from kvproof.checker.upstream.drive import Harness
from kvproof.checker.upstream.loader import Loaded
from kvproof.checker.upstream.run import MOONCAKE, REAL
from kvproof.model.lang.instance import ActionInstance as A
from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


@contextmanager
def harness(version: str, env: dict[str, object]) -> Iterator[Harness]:
    try:
        tree = fetch.cached(version)
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")
    with Loaded(tree, REAL) as loaded, settings.environment(env), settings.quiet("sglang"):
        mods = {n: loaded.module(n) for n in sorted(REAL)}
        yield Harness(mods, select(mods, str(tree)), mods[MOONCAKE].MooncakeKVManager,
                      mods[MOONCAKE].MooncakeKVReceiver)  # fmt: skip


def sent(h: Harness) -> None:
    for inst in (A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,)), A("post", (0, 0))):
        h.apply(inst)


def fact(version: str, name: str) -> bool:
    """What ``spec/releases.toml`` says of the release: the tests below hold it to the code."""
    rel = releases.get("sglang", version)
    assert rel is not None
    return bool(rel.fact(name) if rel.fact(name) is not None else rel.default(name))


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_deferred_release_default_flips_at_0_5_21(version: str) -> None:
    with harness(version, {}) as h:
        assert h.deferred is fact(version, "deferred_release")
        rel = releases.get("sglang", version)
        assert rel is not None and h.adapter.name == rel.adapter  # the table's adapter
    assert fact(version, "deferred_release") is (version in ("0.5.21", "0.5.22", "0.5.23"))


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_an_abort_in_flight_is_held_only_with_deferred_release(version: str) -> None:
    machinery = fact(version, "deferred_release_machinery")  # 0.5.19+
    for on in (False, True):
        env = {DEFERRED: on} if machinery else {}  # 0.5.15-0.5.18 have no such switch
        with harness(version, env) as h:
            sent(h)
            h.apply(A("abort", (0,)))
            held = on and machinery
            assert (h.pages.of(0) == {0}) is held  # held, or freed on the next poll
            if held:
                h.apply(A("timeout", (0,)))  # the 30 s deadline, no ACK: released anyway
                assert h.pages.of(0) == frozenset()


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_a_failure_decode_did_not_start_is_held_from_0_5_21(version: str) -> None:
    env = {DEFERRED: True} if fact(version, "deferred_release_machinery") else {}
    with harness(version, env) as h:
        sent(h)
        h.apply(A("fail", (0,)))
        # decode.py::pop_transferred: ensure_abort_notified(force_arm=True) from 0.5.21
        assert (h.pages.of(0) == {0}) is fact(version, "holds_unstarted_failure")


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_the_waiting_timeout_registers_its_room_from_0_5_21(version: str) -> None:
    if not fact(version, "deferred_release_machinery"):  # 0.5.15-0.5.18: freed at once
        with harness(version, {}) as h:
            sent(h)
            h.apply(A("give_up", (0,)))
            assert h.pages.of(0) == frozenset()
        return
    with harness(version, {DEFERRED: True}) as h:
        sent(h)
        h.apply(A("give_up", (0,)))
        assert h.pages.of(0) == {0}  # held: the receiver set abort_notified
        h.apply(A("ack", (0,)))
        # 0.5.19/0.5.20: common/conn.py::_check_waiting_timeout registers no room, so the
        # ACK is not counted and only the deadline frees the pages.
        assert (h.pages.of(0) == frozenset()) is (version >= "0.5.21")


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_prefill_retires_an_over_long_prompt_at_intake_from_0_5_21(version: str) -> None:
    from kvproof.checker.upstream.intake import intake

    with harness(version, {}) as h:
        over, fits = intake(h.mods, over=True), intake(h.mods, over=False)
    assert fits.retired is False and fits.queued_tokens == fits.prompt_tokens == 1_025
    if fact(version, "intake_retires_over_long"):  # PrefillBootstrapQueue.add
        assert over.retired and over.queued_tokens is None
    else:  # queued as the 1-token stub set_finish_with_abort left
        assert not over.retired and over.queued_tokens == 1


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_pages_reserved_and_sent_for_the_incident_prompt(version: str) -> None:
    """Decode's ``_pre_alloc`` reserves 625 pages of 64 for the 40,000-token prompt; prefill's
    ``finalize_bootstrap`` sends the 1-token stub's single page until 0.5.21 retires it at
    intake (nothing sent). A 1,025-token prompt (16 pages and one token, so a count one page
    short shows): 17 reserved, 17 sent, in every release."""
    from kvproof.checker.upstream.run import page_counts

    with harness(version, {}) as h:
        counts = page_counts(h.mods)
    over, fits = counts[True], counts[False]
    assert (over.prompt_tokens, over.reserved) == (40_000, 625)
    assert over.sent == (None if fact(version, "intake_retires_over_long") else 1)
    assert (fits.reserved, fits.sent, fits.relation) == (17, 17, "whole")


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_decode_status_is_the_managers_until_its_clear_drops_the_room(version: str) -> None:
    """``decode_status`` reads the manager's ``request_status`` for the room: Bootstrapping
    and WaitingForInput are "pending", an abort before the transfer leaves Failed. An abort
    mid-transfer clears the room; prefill's late Success (its ranks never saw the ABORT)
    reaches decode's thread, which drops it for the cleared room in every release
    (0.5.15-0.5.19 ``start_decode_thread``: ``if bootstrap_room in self.request_status``;
    0.5.20+ ``apply_prefill_status``: "Dropping late status for cleared room")."""
    from kvproof.checker.conform.engine import Step

    with harness(version, {}) as h:
        h.apply(A("arrive", (0,)))
        assert h.status_of(0) == "pending"
        h.apply(A("abort", (0,)))
        assert h.status_of(0) == "failed"
    with harness(version, {}) as h:
        sent(h)
        assert h.status_of(0) == "pending"
        h.apply(A("abort", (0,)))
        assert h.status_of(0) is None  # cleared
        h.apply(Step(A("done", (0,)), "failed", "success"))
        assert h.prefill.status(1000) == "success"  # prefill concluded, unaware
        assert h.status_of(0) is None and 1000 not in h.mgr.request_status


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_a_late_ack_of_an_earlier_abort_counts_until_0_5_22(version: str) -> None:
    """``stale_ack``: every prefill rank's ABORT_ACK of an earlier abort of the room, as
    each release's wire carries it. From 0.5.22 ``note_abort_ack`` drops another
    generation's; 0.5.19-0.5.21 count any while the room is held (the model's
    ``ack_generation``)."""
    if not fact(version, "deferred_release_machinery"):
        pytest.skip("0.5.15-0.5.18 hold nothing for an ACK (the decode thread drops it)")
    with harness(version, {DEFERRED: True}) as h:
        sent(h)
        h.apply(A("abort", (0,)))
        assert h.pages.of(0) == {0}  # held for the ACK, the write in flight
        h.apply(A("stale_ack", (0,)))
        assert (h.pages.of(0) == {0}) is fact(version, "ack_carries_generation")
        h.apply(A("land", (0, 0)))
        h.apply(A("ack", (0,)))  # this abort's own ACK frees it in every release
        assert h.pages.of(0) == frozenset()
