"""Why a state of the handoff violates an invariant, in the handoff's own words.

The protocol supplies this to the generic ``model/lang/explain.py`` (``Protocol.explain``), so
generic code never names the handoff's variables or sorts.
"""

from __future__ import annotations

from kvproof.model.lang.concrete import Concrete, State
from kvproof.spec.invariants import INVARIANTS


def _holder(concrete: Concrete, state: State, page: int) -> str:
    reqs = concrete.inst.sizes["Req"]
    for x in range(reqs):
        if concrete.value(state, "holds", (page, x)):
            return f"KV of r{x}"
    return "KV of an earlier request outside the trace (pages are never zeroed)"


def _what_page(concrete: Concrete, state: State, page: int, r: int) -> str:
    """What a page that isolation objects to holds, for reader ``r``."""
    val = concrete.value
    if val(state, "holds", (page, r)) and val(state, "filled", (page,)):
        # at_pos is false: r's own write, but not r's KV for this position in every slot.
        if val(state, "over_p", (r,)):
            return (
                f"p{page} holds r{r}'s 1-token placeholder in one slot and prefill's "
                "leftovers (KV of earlier requests) in the others"
            )
        return f"p{page} holds another chunk of r{r}'s KV than its position in the table"
    return f"p{page} holds {_holder(concrete, state, page)}"


def explain_handoff(concrete: Concrete, last: State, inv_name: str) -> str | None:
    """One sentence: why ``last`` violates ``inv_name``, in the handoff's vocabulary
    (``Protocol.explain`` of ``build_handoff``); None: the invariant's own doc."""
    info = INVARIANTS.get(inv_name)
    reqs = range(concrete.inst.sizes["Req"])
    pages = range(concrete.inst.sizes["Page"])
    val = concrete.value
    if inv_name == "isolation":
        for r in reqs:
            if val(last, "leaked", (r,)):
                at_pos = "at_pos" in {v.name for v in concrete.protocol.vars}
                bad = [
                    p
                    for p in pages
                    if val(last, "owns", (r, p))
                    and not (
                        val(last, "holds", (p, r))
                        and val(last, "filled", (p,))
                        and (not at_pos or val(last, "at_pos", (p,)))
                    )
                ]
                what = "; ".join(_what_page(concrete, last, p, r) for p in bad)
                if not bad and "shares" in {v.name for v in concrete.protocol.vars}:
                    shared = [p for p in pages if val(last, "shares", (r, p))]
                    what = "; ".join(  # issue 12 item 4: a head page of the radix cache
                        f"p{p}, a head page the radix tree shares, holds "
                        f"{_holder(concrete, last, p)}, written after it was cached"
                        for p in shared
                    )
                status = val(last, "resp", (r,))
                return (
                    f"decode read r{r}'s page table while {what}; the client's status is "
                    f"{'200' if status == 'ok' else status}."
                )
    if inv_name == "no_stray_write":
        for p in pages:
            if val(last, "stray", (p,)):
                owner = [r for r in reqs if val(last, "owns", (r, p))]
                who = f"now owned by r{owner[0]}" if owner else "now free"
                return f"a posted write landed in p{p}, {who}, after its writer had released it."
    if inv_name == "reject_final":
        for r in reqs:
            over = val(last, "over_p", (r,)) or val(last, "over_d", (r,)) or val(last, "pend", (r,))
            if over and (val(last, "resp", (r,)) == "ok" or val(last, "dphase", (r,)) == "running"):
                why = []
                if val(last, "over_p", (r,)):
                    why.append("prefill rejected its prompt")
                if val(last, "over_d", (r,)):
                    why.append("decode rejected its prompt")
                if val(last, "pend", (r,)) and not val(last, "over_p", (r,)):
                    why.append("prefill had a pending abort")
                return f"r{r} reached decode with status 200 although {' and '.join(why)}."
    if inv_name == "one_owner":
        for p in pages:
            owners = [r for r in reqs if val(last, "owns", (r, p))]
            if len(owners) > 1:
                return f"p{p} is owned by {', '.join(f'r{r}' for r in owners)} at once."
            if "shared_write" in {v.name for v in concrete.protocol.vars} and val(
                last, "shared_write", (p,)
            ):  # issue 12 item 4: the tree shares it read-only
                return (
                    f"a transfer wrote p{p} while decode's radix tree mapped it: its "
                    "inserter released it to the pool while cached (SGLang #38319)."
                )
    return info.statement if info else None
