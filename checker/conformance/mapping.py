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
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace
from kvproof.model.lang.trace import replay as model_replay
from kvproof.refimpl.events import Event
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
    changed = False
    for r in range(n):
        alloc_at = [i for i, s in enumerate(steps) if s.action == "alloc" and s.args[0] == r]
        sends = [i for i, s in enumerate(steps) if s.action == "send" and s.args[0] == r]
        if not alloc_at or not sends:
            continue
        alloc_at = [i for i in alloc_at if i < sends[0]]
        pages = [steps[i].args[1] for i in alloc_at]
        posted: list[int] = []
        for s in steps:
            if s.action == "post" and s.args[0] == r and s.args[1] not in posted:
                posted.append(s.args[1])
        order = [p for p in pages if p in posted] + [p for p in pages if p not in posted]
        if order != pages:
            changed = True
            for i, p in zip(alloc_at, order, strict=True):
                steps[i] = ActionInstance("alloc", (r, p))
    if not changed:
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
