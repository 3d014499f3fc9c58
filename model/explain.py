"""Readable traces: what each step changed, and why the last state breaks an invariant."""

from __future__ import annotations

from typing import Any

from kvproof.model.concrete import Concrete, State
from kvproof.model.instance import ActionInstance, element_name
from kvproof.spec.invariants import INVARIANTS


def args_dict(concrete: Concrete, inst: ActionInstance) -> dict[str, int]:
    """Arguments named by sort letter: ``{"r": 0, "p": 2}``."""
    params = concrete.protocol.action(inst.action).params
    return {element_name(s, 0)[:-1]: a for s, a in zip(params, inst.args, strict=True)}


def step_label(concrete: Concrete, inst: ActionInstance) -> str:
    params = concrete.protocol.action(inst.action).params
    names = ", ".join(element_name(s, a) for s, a in zip(params, inst.args, strict=True))
    return f"{inst.action}({names})"


def changes(concrete: Concrete, before: State, after: State) -> list[dict[str, Any]]:
    inst = concrete.inst
    return [
        {"var": var, "args": list(args), "cell": inst.describe(var, args), "from": o, "to": n}
        for var, args, o, n in concrete.diff(before, after)
    ]


def change_text(change: dict[str, Any]) -> str:
    def show(v: Any) -> str:
        return {True: "T", False: "F"}.get(v, str(v)) if isinstance(v, bool) else str(v)

    return f"{change['cell']}: {show(change['from'])}->{show(change['to'])}"


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


def explain(concrete: Concrete, states: list[State], inv_name: str) -> str:
    """One sentence: why the last state violates ``inv_name`` (handoff vocabulary)."""
    last = states[-1]
    info = INVARIANTS.get(inv_name)
    names = {v.name for v in concrete.protocol.vars}
    if not {"leaked", "stray", "owns", "holds", "resp"} <= names:
        return _doc(concrete, inv_name)  # a user protocol: its own vocabulary, its own doc
    reqs = range(concrete.inst.sizes["Req"])
    pages = range(concrete.inst.sizes["Page"])
    val = concrete.value
    if inv_name == "isolation":
        for r in reqs:
            if val(last, "leaked", (r,)):
                at_pos = "at_pos" in names
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
    return info.statement if info else _doc(concrete, inv_name)


def _doc(concrete: Concrete, inv_name: str) -> str:
    return concrete.protocol.invariant(inv_name).doc or f"{inv_name} is violated"
