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


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_deferred_release_default_flips_at_0_5_21(version: str) -> None:
    with harness(version, {}) as h:
        assert h.deferred is (version >= "0.5.21")


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_an_abort_in_flight_is_held_only_with_deferred_release(version: str) -> None:
    for on in (False, True):
        with harness(version, {DEFERRED: on}) as h:
            sent(h)
            h.apply(A("abort", (0,)))
            assert (h.pages.of(0) == {0}) is on  # held, or freed on the next poll
            if on:
                h.apply(A("timeout", (0,)))  # the 30 s deadline, no ACK: released anyway
                assert h.pages.of(0) == frozenset()


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_a_failure_decode_did_not_start_is_held_from_0_5_21(version: str) -> None:
    with harness(version, {DEFERRED: True}) as h:
        sent(h)
        h.apply(A("fail", (0,)))
        # decode.py::pop_transferred: ensure_abort_notified(force_arm=True) from 0.5.21
        assert (h.pages.of(0) == {0}) is (version >= "0.5.21")


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_the_waiting_timeout_registers_its_room_from_0_5_21(version: str) -> None:
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
    assert fits.retired is False and fits.queued_tokens == 16
    if version >= "0.5.21":  # prefill.py::PrefillBootstrapQueue.add: is_unadmitted_reject
        assert over.retired and over.queued_tokens is None
    else:  # queued as the 1-token stub set_finish_with_abort left
        assert not over.retired and over.queued_tokens == 1
