"""How a model trace becomes an engine run: requests, prompts, pages, limits.

The model leaves open what a concrete engine fixes, and replay must force the engine's
choices to follow the trace:

- **Requests.** Model request ``r`` is engine request ``r + offset`` (the warm-up tenant's
  requests come first). Its prompt is sized so that decode reserves exactly the pages the
  trace allocates before ``send`` (decode sizes its reservation from its own prompt).
- **Limits.** ``over_p``/``over_d`` are free in the model (it covers every deployment); the
  engine decides them at ``arrive`` from its limits. Replay sets both nodes' admission
  limits just before each ``arrive`` so the prompt falls on the trace's side of each.
- **Pages.** Model page ``p`` is engine page ``p``. The engine's sender writes its i-th
  source page into the i-th destination page it was given (SGLang sends
  ``kv_indices[:len(prefill_pages)]``): a placeholder writes only the first page, and with
  ``decode_reserve = plus_one`` every page but the last. The model lets the sender pick any
  page (pages are symmetric), so ``normalize`` permutes the pages of each request's allocs
  so that the pages the trace posts come first; the result is checked to replay in the model.

**Canaries** make foreign KV readable in a replayed client's answer. The echo model answers
the text stored at positions 0, 1, 2, ... of the pages a request attends to
(``refimpl/echo_model.py``). A leak shows only if the foreign bytes differ from the
reader's own: two requests with the same prompt leak each other's KV without a visible
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

from dataclasses import dataclass, replace

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace
from kvproof.model.lang.trace import replay as model_replay
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.tokenizer import encode
from kvproof.spec.variant import Switches

PAGE_SIZE = 16
# One page-sized chunk of the warm-up tenant's prompt: a stale page echoes it back.
WARMUP_TENANT = "warmup"
WARMUP_CANARY = "CANARY-W-5M8R3T"


def reservations(trace: Trace, sw: Switches) -> tuple[int, ...]:
    """Pages decode must reserve for each request: its allocs before ``send`` (>= 1)."""
    n = trace.sizes["Req"]
    count = [0] * n
    sent = [False] * n
    for inst in trace.steps:
        r = inst.args[0] if inst.args else None
        if inst.action == "alloc" and r is not None and not sent[r]:
            count[r] += 1
        elif inst.action == "send" and r is not None:
            sent[r] = True
    low = 2 if sw.decode_reserve == "plus_one" else 1  # plus_one reserves a page more
    return tuple(max(low, c) for c in count)


def prompt_tokens(k: int, sw: Switches, page_size: int = PAGE_SIZE) -> int:
    """A prompt length whose decode reservation is ``k`` pages (full pages)."""
    own = k - 1 if sw.decode_reserve == "plus_one" else k
    return max(1, own) * page_size


def normalize(trace: Trace, protocol: Protocol) -> Trace:
    """The trace with each request's alloc pages reordered to the engine's sender order.

    Only the page arguments of a request's allocs are permuted (their positions stay); the
    result must replay in the model, else the trace cannot be mapped (KvproofInputError).
    """
    n = trace.sizes["Req"]
    steps = list(trace.steps)
    for r in range(n):
        alloc_at = [i for i, s in enumerate(steps) if s.action == "alloc" and s.args[0] == r]
        sends = [i for i, s in enumerate(steps) if s.action == "send" and s.args[0] == r]
        if not alloc_at or not sends:
            continue
        alloc_at = [i for i in alloc_at if i < sends[0]]
        pages = [steps[i].args[1] for i in alloc_at]
        posted = {s.args[1] for s in steps if s.action == "post" and s.args[0] == r}
        order = sorted(pages, key=lambda p: p not in posted)  # stable: posted pages first
        for i, p in zip(alloc_at, order, strict=True):
            steps[i] = ActionInstance("alloc", (r, p))
    if tuple(steps) == trace.steps:
        return trace
    out = replace(trace, steps=tuple(steps), meta={**trace.meta, "normalized": True})
    concrete = Concrete(Instance(protocol, trace.sizes))
    try:
        model_replay(out, concrete)
    except ReplayError:
        # Not a run of this variant once permuted: replay the trace as given (replay then
        # reports where the model stops, or where the engine's sender order differs).
        return trace
    return out


@dataclass(frozen=True)
class RidMap:
    """Model request ``r`` <-> engine request ``r + offset``; pages map to themselves."""

    offset: int

    def event(self, inst: ActionInstance) -> Event:
        page = inst.args[1] if len(inst.args) > 1 else None
        return Event(inst.action, inst.args[0] + self.offset, page)

    def action(self, ev: Event) -> ActionInstance | None:
        r = ev.rid - self.offset
        if r < 0:
            return None  # the warm-up tenant: outside the model's instance
        args = (r,) if ev.page is None else (r, ev.page)
        return ActionInstance(ev.name, args)


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
