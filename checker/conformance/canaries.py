"""Canaries: what makes foreign KV readable in a replayed client's answer.

The echo model answers the text stored at positions 0, 1, 2, ... of the pages a request
attends to (``refimpl/echo_model.py``). A leak shows only if the foreign bytes differ from
the reader's own: two requests with the same prompt leak each other's KV without a visible
difference (the stray write carries the very tokens the victim had). So every party of a
replay writes its own canary into its KV, one per page-sized chunk:

- each model request ``r`` is tenant ``t<r>`` with prompt ``+T<r>-CANARY-...`` repeated;
- the warm-up tenant's canary fills decode's pool before the trace (``lockstep.Lockstep``);
- other traffic that reuses prefill's blocks after a lease expiry or an early free
  (``expire``, vLLM #52234, dynamo #826) is a tenant too: its canary is written into the
  freed blocks (the engine's own stand-in is random bytes, which name nobody).

A leak is then a *foreign canary in a response*, read by the engine's own data path
(transfer, decode attention): never inferred from the recorder or the model.
"""

from __future__ import annotations

from kvproof.checker.conformance.mapping import WARMUP_CANARY
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.tokenizer import encode

# The tenant whose requests reuse prefill's blocks once the engine released them early.
REUSE_TENANT = "other-traffic"
REUSE_CANARY = "CANARY-P-7Q2V9K"
# A model request's pages start with another byte than the warm-up's: a stale read too
# short to carry a whole canary still gives other tokens than the single node's.
REQUEST_LEAD = "+"
_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"


def tenant(r: int) -> str:
    """The tenant of model request ``r``: one tenant per request, so any KV of another
    request is foreign to the reader."""
    return f"t{r}"


def request_canary(r: int) -> str:
    """A canary as long as the warm-up's, unique per request and no prefix of another's
    (the request number is followed by ``-``). It starts unlike the warm-up's, so that
    even a 2-token read of a stale page differs from the reader's own tokens."""
    head = f"T{r}-CANARY-"
    n = max(len(WARMUP_CANARY) - len(head), 4)
    x, tail = (r + 1) * 2654435761, ""
    for _ in range(n):
        x, d = divmod(x, len(_ALPHABET))
        tail += _ALPHABET[d]
    return head + tail


def page_chunk(canary: str, page_size: int, lead: str = "~") -> str:
    """One page of a canary prompt. The canary sits after the page's first slot: slot 0 is
    where a reader's own token most often lands (a placeholder), the rest is echoed back."""
    if page_size <= len(canary):
        return canary[:page_size]
    return (lead + canary + " " * page_size)[:page_size]


def canary_prompt(canary: str, n: int, page_size: int, lead: str = "~") -> list[int]:
    """``n`` tokens of the canary's page chunks (every page carries the whole canary)."""
    one = page_chunk(canary, page_size, lead)
    return encode((one * (-(-n // len(one))))[:n])


def system_prompt(page_size: int) -> list[int]:
    """One page of a system prompt every tenant's prompt opens with (no canary: it is
    nobody's secret), the head a decode radix cache shares between requests."""
    return encode(("You are a helpful assistant. " * page_size)[:page_size])


def reuse_source(cluster: Cluster, rid: int) -> None:
    """Other traffic takes the prefill blocks request ``rid`` just lost: its KV (with its
    canary, at the same positions) replaces the engine's random stand-in. The engine wrote
    the bytes it reads next from its own pool; replay only plays the other tenant.

    Only blocks that are free now: a request whose poll failed has given its blocks back
    already (its lease expires later), and the allocator may have handed them to the next
    request, whose KV other traffic cannot touch. Writing them all planted a leak on
    vllm-nixl-fixed (fail r0, r1 allocates r0's blocks, expire r0: r1 got 200 with the
    reuse canary), found by the 10,000-walk campaigns of issue 30."""
    pages = [p for p in cluster.pages_of(rid).prefill if cluster.is_free("prefill", p)]
    if not pages:
        return
    ps = cluster.sizes.page_size
    cluster.plant_kv("prefill", canary_prompt(REUSE_CANARY, len(pages) * ps, ps), 0, pages)


def fill_unwritten(cluster: Cluster, pages: range, canary: str, index: int) -> None:
    """Decode pages that no write of this run reached get ``canary``'s KV at chunk
    ``index`` (positions ``index * page_size ..``): what an earlier request whose table
    put the page at ``index`` left there. With ``decode_reserve = plus_one`` (vLLM PR
    #50558) the warm-up's own last page is never written (its sender has one page fewer),
    yet a reader attends over it at exactly that chunk; boot-time noise would name nobody."""
    truth = cluster.truth.decode
    ps = cluster.sizes.page_size
    tokens = canary_prompt(canary, ps, ps)
    for page in pages:
        if truth.writer[page] is None:
            cluster.plant_kv("decode", tokens, index * ps, [page] * (index + 1))
