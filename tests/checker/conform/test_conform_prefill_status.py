"""Prefill's status and chunked send come from the release's code (``checker/upstream/
status.py``, ``chunks.py``): a planted copy whose Failed is not terminal, or whose abort
sends no ABORT, or whose last chunk drops its partial page, is a divergence; scripted walks
show what each side holds. Cached wheels; skips with the reason when none is cached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvproof.checker.conform.engine import RequestSpec
from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.drive import Harness
from kvproof.checker.upstream.engine import open_sglang
from kvproof.checker.upstream.run import conform
from kvproof.model.lang.instance import ActionInstance as A
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

CONN = "sglang/srt/disaggregation/common/conn.py"
PREFILL = "sglang/srt/disaggregation/prefill.py"
SENT = [A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,)), A("post", (0, 0))]


def _tree(version: str) -> Path:
    try:
        return fetch.cached(version)
    except KvproofInputError as exc:
        pytest.skip(f"no cached sglang {version} wheel and no index: {exc}")


def _planted(tmp_path: Path, rel: str, old: str, new: str) -> Path:
    """A copy of the cached 0.5.22 tree with one change (the rest hard-linked)."""
    import os
    import shutil

    src = _tree("0.5.22")
    dest = tmp_path / "sglang-planted"
    shutil.copytree(src, dest, copy_function=os.link)
    target = dest / rel
    text = target.read_text()
    assert text.count(old) == 1, old
    target.unlink()  # a hard link into the cache: write a new file
    target.write_text(text.replace(old, new))
    return dest


@contextmanager
def harness(tree: str | Path, variant: str = "sglang-0.5.22-pd") -> Iterator[Harness]:
    with open_sglang(load_variant(variant), str(tree)) as engine:
        yield engine.harness((RequestSpec(False, False),))


def test_prefill_holds_failed_from_its_abort_and_reports_it() -> None:
    """0.5.22: ``sender.abort`` fails the room; decode's metadata arriving later leaves it
    Failed (``update_status``: Failed is terminal) and ``conclude_transfer`` downgrades the
    Success prefill's worker asks for, so decode receives Failed."""
    with harness(_tree("0.5.22")) as h:
        h.apply(A("arrive", (0,)))
        h.apply(A("p_abort", (0,)))
        assert h.prefill.status(1000) == "failed"
        for inst in SENT[1:]:
            h.apply(inst)
        assert h.prefill.status(1000) == "failed"
        h.apply(A("land", (0, 0)))
        h.apply(A("done", (0,)))
        assert h.outcome.aborted and not h.outcome.committed


def test_a_clean_transfer_is_success_on_both_sides() -> None:
    with harness(_tree("0.5.22")) as h:
        for inst in [*SENT, A("land", (0, 0)), A("done", (0,))]:
            h.apply(inst)
        assert h.prefill.status(1000) == "success"
        assert h.outcome.committed == {0}


def test_0_5_19_lets_a_later_status_promote_prefill_s_failed_room() -> None:
    """0.5.19's ``update_status`` takes ``max()``: decode's metadata arriving after the
    abort makes the room WaitingForInput again, and the worker's Success goes to decode."""
    with harness(_tree("0.5.19"), "sglang-0.5.19-pd") as h:
        h.apply(A("arrive", (0,)))
        h.apply(A("p_abort", (0,)))
        for inst in [*SENT[1:], A("land", (0, 0))]:
            h.apply(inst)
        assert h.prefill.status(1000) == "pending"
        h.apply(A("done", (0,)))
        assert h.prefill.status(1000) == "success" and h.outcome.committed == {0}


def test_a_prealloc_abort_reaches_prefill_through_the_abort_decode_sent() -> None:
    """An abort before decode reserved anything: the receiver already knows its prefill
    ranks (``CommonKVReceiver.init``), so ``abort`` sends each an ABORT, and prefill's
    ``_handle_abort_notification`` fails the room on the frames decode sent."""
    with harness(_tree("0.5.22")) as h:
        h.apply(A("arrive", (0,)))
        h.apply(A("abort", (0,)))
        assert h.peer.aborts == [1000, 1000]  # one per prefill rank
        h.apply(A("abort_seen", (0,)))
        assert h.prefill.status(1000) == "failed"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The brief's planted copy: Failed no longer terminal in ``update_status``.
        (
            "        if current == KVPoll.Failed:\n            # Failed is terminal.",
            "        if False:\n            # Failed is terminal.",
        ),
        # An abort that notifies no one.
        (
            "        self.conclude_state = KVPoll.Failed\n        self.ensure_abort_notified()",
            "        self.conclude_state = KVPoll.Failed",
        ),
    ],
    ids=["failed_not_terminal", "abort_not_notified"],
)
def test_a_planted_status_bug_is_a_prefill_status_divergence(
    tmp_path: Path, old: str, new: str
) -> None:
    tree = _planted(tmp_path, CONN, old, new)
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=200)
    assert run.exit_code == 1, run.detail
    assert any("prefill_status: model failed, code pending" in d for d in run.detail)


@pytest.mark.parametrize("version", fetch.RELEASES)
def test_chunks_carry_every_reserved_page_and_end_once(version: str) -> None:
    """A 1,025-token prompt in chunks of 512 tokens and pages of 64: the first two chunks
    send 8 pages each (no partial page held back: 512 is page-aligned), the last the one
    page holding token 1,025, and only the last is flagged last: 17 of 17 reserved."""
    with open_sglang(load_variant("sglang-0.5.22-pd"), str(_tree(version))) as engine:
        fits = engine.pages["fits"]
    assert fits.chunks is not None
    assert fits.chunks.pages == (8, 8, 1) and fits.chunks.last == (False, False, True)
    assert (fits.sent, fits.reserved, fits.relation) == (17, 17, "whole")


@pytest.mark.slow
def test_a_last_chunk_that_drops_its_partial_page_is_a_page_count_divergence(
    tmp_path: Path,
) -> None:
    """``send_kv_chunk`` holding back the partial last page on the last chunk too: prefill
    sends 16 of the 17 pages decode reserved, and the sender never flags a last chunk."""
    tree = _planted(
        tmp_path,
        PREFILL,
        "        if not last_chunk:\n            # if not the last chunk and the last page is "
        "partial, delay the last partial page to the next send\n            end_idx = end_idx "
        "- end_idx % page_size",
        "        if True:\n            # if not the last chunk and the last page is "
        "partial, delay the last partial page to the next send\n            end_idx = end_idx "
        "- end_idx % page_size",
    )
    with open_sglang(load_variant("sglang-0.5.22-pd"), str(tree)) as engine:
        fits = engine.pages["fits"]
    # The last send carries no page, so the sender's count never reaches its ``init``'s 17.
    assert fits.chunks is not None and fits.chunks.pages == (8, 8, 0)
    assert fits.chunks.last == (False, False, False) and fits.sent == 16
    assert fits.relation == "unfinished"  # no chunk flagged last: decode is never told
    run = conform(load_variant("sglang-0.5.22-pd"), str(tree), traces=50)
    assert run.exit_code == 1
    assert any("pages_sent_of_reserved: model whole, code unfinished" in d for d in run.detail)


def test_walks_can_deliver_a_late_success_to_a_failed_room() -> None:
    """The environment event the status path needs: prefill's ``done`` after decode's
    abort (decode draining, its poll failed, prefill still writing) is a transition of the
    model at conform's size, so the covering walks take it (no wheel needed)."""
    from kvproof.checker.conform.coverage import reachable
    from kvproof.checker.conform.run import Options, allowed_actions
    from kvproof.checker.upstream.engine import SIZES
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.concrete import Concrete
    from kvproof.model.lang.instance import Instance

    concrete = Concrete(Instance(protocol_of(load_variant("sglang-0.5.22-pd")), dict(SIZES)))
    reach = reachable(concrete, allowed_actions(Options().faults))
    assert ("done", ("draining", "active", "failed")) in reach.transitions
    # ... and prefill's abort while it still waits for decode's metadata (then ``send``)
    assert ("p_abort", ("queued", "waiting", "none")) in reach.transitions
