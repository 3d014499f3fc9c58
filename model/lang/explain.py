"""Readable traces: what each step changed, and why the last state breaks an invariant.

Generic over protocols: the sentence that explains a violation in a protocol's own words
comes from the protocol (``Protocol.explain``; the handoff's is ``model/handoff/explain.py``),
else the invariant's doc.
"""

from __future__ import annotations

from typing import Any

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, element_name


def args_dict(concrete: Concrete, inst: ActionInstance) -> dict[str, int]:
    """Arguments named by sort letter: ``{"r": 0, "p": 2}``."""
    params = concrete.protocol.action(inst.action).params
    return {element_name(s, 0)[:-1]: a for s, a in zip(params, inst.args, strict=True)}


def step_label(concrete: Concrete, inst: ActionInstance) -> str:
    return action_label(concrete.protocol, inst)


def action_label(protocol: Protocol, inst: ActionInstance) -> str:
    """``alloc(r0, p1)``: the one display of an action, arguments named by their sort
    (``str(inst)`` is ``alloc(0, 1)``, which does not say which is the request)."""
    params = protocol.action(inst.action).params
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


def explain(concrete: Concrete, states: list[State], inv_name: str) -> str:
    """One sentence: why the last state violates ``inv_name``, in the protocol's words."""
    hook = concrete.protocol.explain
    text = hook(concrete, states[-1], inv_name) if hook is not None else None
    return text or _doc(concrete, inv_name)


def _doc(concrete: Concrete, inv_name: str) -> str:
    return concrete.protocol.invariant(inv_name).doc or f"{inv_name} is violated"
