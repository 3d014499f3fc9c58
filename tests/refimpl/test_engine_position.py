"""Position ground truth (issue 12 item 3): a write carries a chunk index, and decode's
prefix cache makes the sender's trim matter (vLLM #48758)."""

from __future__ import annotations

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.limits import INPUT_HEADROOM, Limits
from kvproof.refimpl.oracle import leak_check
from kvproof.spec.variant import Sizes, load_variant

SIZES = Sizes(context_len=256, prefill_pool_tokens=512, decode_pool_tokens=512, page_size=16)
PROMPT = "".join(chr(ord("a") + i % 26) for i in range(48))  # 3 pages, all different


def _run(name: str) -> tuple[Cluster, int]:
    c = Cluster(load_variant(name), sizes=SIZES)
    c.decode.prefix_pages = 1  # decode's prefix cache holds the first page of the prompt
    rid = c.submit("A", PROMPT, 47)
    c.run()
    return c, rid


def test_head_trim_writes_the_wrong_chunks() -> None:
    c, rid = _run("vllm-nixl-push-head-trim")
    req, d = c.requests[rid], c.handoff.flights[rid].d
    assert req.hit and d.reserve == 2 and d.aux is not None and d.aux.pages_written == 2
    assert req.resp == "ok" and c.truth.read_stale(rid)  # 200, over pages at the wrong position
    assert all(not r.at_pos and r.writer == rid for r in c.truth.reads_of(rid))
    (finding,) = leak_check(c)
    assert finding.wrong and not finding.leak and not finding.tokens_match


def test_tail_trim_writes_every_chunk_in_place() -> None:
    c, rid = _run("vllm-nixl-push-fixed")
    req = c.requests[rid]
    assert req.hit and req.resp == "ok" and not c.truth.read_stale(rid)
    (finding,) = leak_check(c)
    assert not finding.wrong and finding.tokens_match


def test_placeholder_page_is_not_in_place() -> None:
    """A 1-token placeholder ships a whole page: decode's page is the writer's only in slot
    0 (at_pos false), even though a page tag or page count would pass it."""
    v = load_variant("sglang-0.5.19-pd")
    c = Cluster(v, sizes=SIZES)
    c.prefill.limits = Limits(15 + INPUT_HEADROOM, 15)  # the 16-token prompt is over it
    rid = c.submit("A", PROMPT[:16], 4)
    c.run()
    req = c.requests[rid]
    assert req.resp == "ok" and c.truth.read_stale(rid)
    (read,) = c.truth.reads_of(rid)
    assert read.writer == rid and read.valid == 1 and read.read == 16 and not read.at_pos
