"""Why ``sglang-0.5.19-pd`` diverges on 0.5.20 (issue 39): a behaviour change in the release's
code, not the harness. A prefill abort that reaches the sender after its pages landed, then
the transfer worker's Success: 0.5.19's ``mooncake/conn.py::MooncakeKVManager.transfer_worker``
calls ``update_status(Success)``, which takes ``max()`` over a Failed room (Failed sorts
lowest), and sends Success, so decode commits; 0.5.20's worker calls
``common/conn.py::CommonKVManager.conclude_transfer``, which downgrades the Success to Failed
(the room has ``CommonKVSender.abort``'s failure record) and ``update_status`` keeps Failed
terminal, so decode receives Failed and frees. One request is enough: nothing of another
request's crosses into it. Cached wheels; skips with the reason when one is not cached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvproof.checker.conform.engine import RequestSpec
from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.drive import Harness
from kvproof.checker.upstream.engine import open_sglang
from kvproof.model.lang.instance import ActionInstance as A
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

# arrive, reserve a page, decode's metadata, the write lands, prefill's abort, then Success
LATE_ABORT = [A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,)), A("post", (0, 0))]
LATE_ABORT += [A("land", (0, 0)), A("p_abort", (0,)), A("done", (0,))]


def _tree(version: str) -> Path:
    try:
        return fetch.cached(version)
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")


@contextmanager
def harness(version: str, requests: tuple[RequestSpec, ...]) -> Iterator[Harness]:
    with open_sglang(load_variant("sglang-0.5.19-pd"), str(_tree(version))) as engine:
        yield engine.harness(requests)


@pytest.mark.parametrize(
    ("version", "prefill", "committed"),
    [("0.5.19", "success", True), ("0.5.20", "failed", False)],
)
def test_a_late_prefill_abort_then_success(version: str, prefill: str, committed: bool) -> None:
    with harness(version, (RequestSpec(False, False),)) as h:
        for inst in LATE_ABORT:
            h.apply(inst)
        assert h.prefill.status(1000) == prefill
        assert (0 in h.outcome.committed) is committed
        assert (0 in h.outcome.aborted) is not committed
        assert bool(h.pages.of(0)) is committed  # 0.5.20: freed at once (release immediate)


def test_the_divergent_walk_is_r1_s_own() -> None:
    """The walk ``conform sglang-0.5.19-pd --sglang 0.5.20`` found: r0's arrival, abort and
    ABORT, and a stale ACK of r1's, leave r1's room as they found it; its ``done`` alone
    makes it Failed."""
    over_long_r0 = (RequestSpec(True, False), RequestSpec(False, False))
    with harness("0.5.20", over_long_r0) as h:
        for inst in [A("arrive", (1,)), A("alloc", (1, 1)), A("send", (1,)), A("post", (1, 1))]:
            h.apply(inst)
        h.apply(A("land", (1, 1)))
        h.apply(A("p_abort", (1,)))
        seen = (h.prefill.status(1001), h.status_of(1), h.pages.of(1))
        for inst in [A("arrive", (0,)), A("alloc", (0, 2)), A("stale_ack", (1,))]:
            h.apply(inst)
        h.apply(A("abort", (0,)))
        h.apply(A("abort_seen", (0,)))
        assert (h.prefill.status(1001), h.status_of(1), h.pages.of(1)) == seen
        assert seen[0] == "failed" and seen[1] == "pending"
        h.apply(A("done", (1,)))
        assert h.prefill.status(1001) == "failed" and 1 in h.outcome.aborted


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_the_over_long_stub_after_its_forward(version: str) -> None:
    """``prefill_reject``: once decode's metadata reached prefill, the stub runs its forward.
    0.5.20+ retire it there (``_retire_aborted_prefill_result``: both prefill ranks Failed,
    nothing sent to decode, which frees only at its waiting timeout); 0.5.15-0.5.19 leave
    it pending, to be sent; 0.5.21+ never queue it (retired at intake: no sender)."""
    from kvproof.checker.upstream.forward import retires_after_forward
    from kvproof.spec import releases

    rel = releases.get("sglang", version)
    assert rel is not None
    with harness(version, (RequestSpec(True, False),)) as h:
        assert retires_after_forward(h.mods) is rel.fact("retires_aborted_result")
        for inst in [A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,))]:
            h.apply(inst)
        if rel.fact("intake_retires_over_long"):
            assert h.prefill.status(1000) is None
        else:
            retired = bool(rel.fact("retires_aborted_result"))
            assert h.prefill.status(1000) == ("failed" if retired else "pending")
        assert h.status_of(0) == "pending" and not h.prefill.outbox  # decode told nothing
        h.apply(A("give_up", (0,)))  # the waiting timeout (300 s): failed
        # freed at once by default before 0.5.21 (deferred release off); held from 0.5.21
        assert (h.pages.of(0) == frozenset()) is not h.deferred
