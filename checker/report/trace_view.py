"""A trace prepared for drawing: every state re-derived by the model, as plain data.

The HTML report draws from this and nothing else. States come from replaying the trace
with the concrete interpreter (a trace carries no states of its own), so what the chart and
the page grid show is what the model says, cell by cell. Pages are read generically from
the protocol's variables: any variable with a ``Page`` argument is page state, so a model
whose ``holds`` gains a chunk position still renders (the extra arguments are shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvproof.checker.verify.liveness import forever, lasso_explanation
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.explain import args_dict, change_text, changes, explain, step_label
from kvproof.model.lang.instance import Instance, element_name
from kvproof.model.lang.trace import Trace, replay
from kvproof.spec.invariants import INVARIANTS

# Actions that read a request's pages (decode attends over its whole table).
READS = ("commit", "step")

Cells = dict[str, dict[tuple[int, ...], Any]]


@dataclass(frozen=True)
class TraceView:
    variant: str
    sizes: dict[str, int]
    # ``trace_rows``: each step as plain data ("step" 1-based, "action", "args" by sort letter,
    # "label", "changes"), what the chart, the page pool and engine words read
    steps: tuple[dict[str, Any], ...]
    states: tuple[Cells, ...]  # initial first: len(steps) + 1
    var_sorts: dict[str, tuple[str, ...]]  # variable -> its argument sorts
    violated: str | None  # the invariant the trace is a counterexample to
    violated_step: int | None  # first step after which ``violated`` is false
    explanation: str  # model/lang/explain.py's "why" sentence
    invariant_statement: str
    initial: tuple[str, ...]  # the initial state's non-default free choices
    push: bool = True
    placeholders: tuple[int, ...] = ()  # requests prefilled as a 1-token placeholder
    meta: dict[str, Any] = field(default_factory=dict)
    # A lasso (issue #29): steps ``loop + 1..`` repeat forever; ``forever`` names what the
    # loop never resolves, as (target, text): ("p0", "page p0 is never returned ...").
    loop: int | None = None
    forever: tuple[tuple[str, str], ...] = ()

    def in_loop(self, number: int) -> bool:
        """Step ``number`` (1-based) is one of the loop's."""
        return self.loop is not None and number > self.loop

    def forever_of(self, target: str) -> str | None:
        """What the loop never resolves about ``target`` ("p0", "r1"), or None."""
        return next((text for t, text in self.forever if t == target), None)

    def value(self, k: int, var: str, args: tuple[int, ...], default: Any = None) -> Any:
        return self.states[k].get(var, {}).get(args, default)

    def has(self, var: str) -> bool:
        return var in self.var_sorts


def build(trace: Trace, protocol: Protocol, states: Sequence[State] = ()) -> TraceView:
    """Every state of ``trace``: ``states`` when the caller holds them (a checked
    counterexample carries its own), else replayed in the model (ReplayError if no run)."""
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = list(states) or replay(trace, concrete)
    violated_step = None  # the first step after which ``violated`` is false, not before
    if trace.violated and trace.violated not in concrete.violated(states[0]):
        broken = (i for i, s in enumerate(states) if trace.violated in concrete.violated(s))
        violated_step = next(broken, None)
    sw = protocol.switches
    lasso = trace.loop is not None
    found = forever(trace, protocol, states) if lasso else ()
    why = trace_explanation(protocol, trace, states) if trace.violated or lasso else ""
    return TraceView(
        variant=trace.variant,
        sizes=dict(trace.sizes),
        steps=tuple(trace_rows(protocol, trace, states)),
        states=tuple(concrete.as_dict(s) for s in states),
        var_sorts={v.name: v.args for v in protocol.vars},
        violated=trace.violated,
        violated_step=violated_step,
        explanation=why,
        invariant_statement=statement(protocol, trace.violated) if trace.violated else "",
        initial=tuple(initial_choices(protocol, trace)),
        push=getattr(sw, "transfer_mode", "push") != "pull",
        placeholders=_placeholders(sw, trace),
        meta=dict(trace.meta),
        loop=trace.loop,
        forever=tuple((f.target, f.text()) for f in found),
    )


def statement(protocol: Protocol, name: str) -> str:
    """What invariant ``name`` says: the catalog's statement, else the protocol's own doc."""
    info = INVARIANTS.get(name)
    return info.statement if info else invariant_doc(protocol, name)


def invariant_doc(protocol: Protocol, name: str) -> str:
    try:
        return protocol.invariant(name).doc
    except KeyError:
        return ""


def trace_explanation(protocol: Protocol, trace: Trace, states: Sequence[State] = ()) -> str:
    """Why the trace's last state is bad (``model/lang/explain.py``), or, for a lasso, what
    its loop never resolves (issue #29)."""
    if trace.loop is not None:
        return lasso_explanation(trace, protocol, states)
    concrete = Concrete(Instance(protocol, trace.sizes))
    return explain(concrete, list(states) or replay(trace, concrete), trace.violated or "")


def _placeholders(sw: object, trace: Trace) -> tuple[int, ...]:
    """Requests over prefill's limit whose pending reject is not honoured: prefilled as a
    1-token placeholder that writes one page (SGLang #30233; ``placeholder`` in
    ``model/handoff/rules/guards.py``)."""
    if not getattr(sw, "placeholder_prompt", False) or getattr(sw, "honor_pending_reject", True):
        return ()
    over_p, over_d = trace.init.get("over_p", {}), trace.init.get("over_d", {})
    used = {inst.args[0] for inst in trace.steps if inst.args}
    return tuple(
        sorted(a[0] for a, v in over_p.items() if v and a and not over_d.get(a) and a[0] in used)
    )


def initial_choices(protocol: Protocol, trace: Trace) -> list[str]:
    """The initial state's free choices that are not defaults (e.g. ``over_p(r0)``)."""
    inst = Instance(protocol, trace.sizes)
    return [
        inst.describe(var, args)
        for var, cells in trace.init.items()
        for args, value in sorted(cells.items())
        if value != protocol.var(var).default
    ]


# -- rows: each step as plain data (``--json``, engine words, the tables) ---------------------


def trace_rows(
    protocol: Protocol, trace: Trace, states: Sequence[State] = ()
) -> list[dict[str, Any]]:
    """Each step: its action, arguments, label and what it changed (``states``: the
    trace's, as the search derived them; replayed only for a trace that has none)."""
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = list(states) or replay(trace, concrete)
    rows = []
    for i, inst in enumerate(trace.steps):
        rows.append(
            {
                "step": i + 1,
                "action": inst.action,
                "args": args_dict(concrete, inst),
                "label": step_label(concrete, inst),
                "changes": changes(concrete, states[i], states[i + 1]),
            }
        )
        if trace.loop is not None and i >= trace.loop:
            rows[-1]["in_loop"] = True  # a lasso's loop (issue #29): these steps repeat
    return rows


def cells_text(row: dict[str, Any]) -> str:
    """A row's changed cells as the model writes them (``owns(r0, p0): F->T``): ``--raw``."""
    return "; ".join(change_text(c) for c in row["changes"] if c["var"] != "posted")


# -- pages -----------------------------------------------------------------------------------


def page_cells(view: TraceView, k: int, var: str, page: int) -> list[tuple[tuple[int, ...], Any]]:
    """Non-default cells of ``var`` whose Page argument is ``page``, in state ``k``, with
    the other arguments (e.g. ``holds(p1, r0)`` -> ``((0,), True)``)."""
    sorts = view.var_sorts.get(var)
    if not sorts or "Page" not in sorts:
        return []
    at = sorts.index("Page")
    cells = sorted(view.states[k].get(var, {}).items())
    return [(a[:at] + a[at + 1 :], v) for a, v in cells if a[at] == page and v not in (False, None)]


def others_text(view: TraceView, var: str, rest: tuple[int, ...]) -> str:
    """Names of the non-page arguments: ``r0`` or ``r0, k1``."""
    sorts = [s for s in view.var_sorts[var] if s != "Page"]
    return ", ".join(element_name(s, a) for s, a in zip(sorts, rest, strict=True))


def owner(view: TraceView, k: int, page: int) -> list[int]:
    return [rest[0] for rest, _ in page_cells(view, k, "owns", page)]


def holders(view: TraceView, k: int, page: int) -> list[str]:
    """Whose KV the page's bytes are (with a chunk position when the model has one)."""
    return [others_text(view, "holds", rest) for rest, _ in page_cells(view, k, "holds", page)]


def inflight(view: TraceView, k: int, page: int) -> list[int]:
    return [rest[0] for rest, _ in page_cells(view, k, "inflight", page)]


def fresh_for(view: TraceView, k: int, page: int, req: int) -> bool:
    """The page holds ``req``'s KV written in this allocation (the isolation test)."""
    held = any(rest and rest[0] == req for rest, _ in page_cells(view, k, "holds", page))
    filled = view.value(k, "filled", (page,), True) if view.has("filled") else True
    # at_pos: every slot decode reads is the writer's KV at its chunk (a placeholder's one page
    # carries prefill's leftover slots, SGLang #30233; a misplaced chunk, vLLM #48758).
    at_pos = view.value(k, "at_pos", (page,), True) if view.has("at_pos") else True
    return held and bool(filled) and bool(at_pos)


def reads(view: TraceView, step: dict[str, Any]) -> list[tuple[int, bool]]:
    """(page, stale) for every page ``step`` reads: a decode read of the request's table,
    judged in the state before the step."""
    r = step["args"].get("r")
    if step["action"] not in READS or r is None or not view.has("owns"):
        return []
    k = step["step"] - 1
    pages = [p for p in range(view.sizes.get("Page", 0)) if r in owner(view, k, p)]
    return [(p, not fresh_for(view, k, p, r)) for p in pages]


def page_extra(view: TraceView, k: int, page: int) -> list[str]:
    """Other page state the model has (beyond owner, contents, writes), generically."""
    known = {"owns", "holds", "inflight", "posted", "dst", "filled"}
    out = []
    for var, sorts in view.var_sorts.items():
        if var in known or "Page" not in sorts:
            continue
        for rest, value in page_cells(view, k, var, page):
            inner = others_text(view, var, rest)
            text = f"{var}({inner})" if inner else var
            out.append(text if value is True else f"{text}={value}")
    return out
