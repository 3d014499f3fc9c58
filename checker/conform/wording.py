"""A diagnosis in an engine developer's words: what the code did to which request, when,
what the model of the variant does instead, and the switch value the code behaves as.

    0.5.22's code frees r0's 2 pages when the client aborts while prefill is still
    writing them; the model of sglang-0.5.22-pd holds them (switch `release`: the code
    behaves as `immediate`, it frees an aborted request's pages at once)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.conform.engine import Engine
from kvproof.checker.conform.projection import Mismatch
from kvproof.checker.conform.walk import WalkResult
from kvproof.model.lang.concrete import Concrete, State
from kvproof.spec.variant import Variant

# The last model step on a request, as what happened to it.
WHEN = {
    "arrive": "when its prompt arrives",
    "alloc": "when decode allocates a page",
    "send": "when decode hands prefill its pages",
    "post": "when prefill posts a write",
    "land": "when a write lands",
    "done": "when prefill reports the transfer done",
    "fail": "when the transfer fails",
    "p_abort": "when prefill aborts it",
    "commit": "when decode commits the transfer",
    "abort": "when the client aborts",
    "ack": "when prefill ACKs the abort",
    "timeout": "when the release deadline passes",
    "give_up": "when decode's waiting deadline passes",
    "stale_ack": "after a late ABORT_ACK of an earlier abort of its room",
    "finish": "when generation ends",
}

# What a switch value means, in the code's terms.
MEANS = {
    ("release", "immediate"): "frees an aborted request's pages at once",
    ("release", "deferred_ack"): "holds an aborted request's pages until prefill ACKs",
    ("release", "deferred_timeout"): "holds them until prefill ACKs or the release timeout",
    ("failed_means_drained", "true"): "frees a failed transfer's pages at once",
    ("failed_means_drained", "false"): "holds a failed transfer's pages like an abort's",
    ("abort_ack", "before_drain"): "takes an ACK sent before prefill's writes drained",
    ("abort_ack", "after_drain"): "takes an ACK only after prefill's writes drained",
    ("decode_gives_up", "never"): "never gives up waiting on its own",
    ("decode_gives_up", "free_at_once"): "frees the pages at once when it gives up waiting",
    ("decode_gives_up", "hold"): "holds the pages when it gives up waiting, like an abort",
    ("honor_pending_reject", "true"): "retires an over-long prompt at prefill's intake",
    ("honor_pending_reject", "false"): "does not retire an over-long prompt at intake",
    ("placeholder_prompt", "true"): "queues an over-long prompt as the 1-token stub",
    ("placeholder_prompt", "false"): "queues an over-long prompt whole",
    ("success_overwrites_abort", "true"): "lets prefill's Success overwrite an abort",
    ("success_overwrites_abort", "false"): "keeps an abort over a later Success",
    ("decode_admission", "retire_reject"): "retires a prompt over decode's limit at the door",
    ("decode_admission", "queue_reject"): "queues a prompt over decode's limit, not retiring it",
    ("prefill_hold", "lease"): "frees prefill's source blocks when its lease expires",
    ("prefill_hold", "until_read"): "holds prefill's source blocks until the transfer ends",
    ("ack_generation", "checked"): "drops a late ABORT_ACK of an earlier abort of the room",
    ("ack_generation", "unchecked"): "counts any ABORT_ACK while it holds the room",
}


def headline(
    engine: Engine,
    variant: Variant,
    concrete: Concrete,
    res: WalkResult,
    explained: tuple[tuple[str, str], ...],
) -> str:
    who = f"{Path(engine.release).name}'s code" if engine.release else "the code"
    if not res.mismatches:
        return f"{who} diverges from the model of {variant.name}"
    m = res.mismatches[0]
    state = _state_at(concrete, res)
    did, instead = _said(m)
    when = _when(concrete, res, state, m.request)
    line = f"{who} {did}{when}; the model of {variant.name} {instead}"
    if not explained:
        return f"{line} (no single switch explains it; first difference: {m.line()})"
    values: dict[str, list[str]] = {}
    for s, v in explained:
        values.setdefault(s, []).append(v)
    flips = "; ".join(
        f"switch `{s}`: the code behaves as "
        + " or ".join(f"`{v}`" for v in vs)
        + (f", it {MEANS[(s, vs[0])]}" if (s, vs[0]) in MEANS else "")
        for s, vs in values.items()
    )
    return f"{line} ({flips})"


def _state_at(concrete: Concrete, res: WalkResult) -> State:
    state = res.init
    for inst in res.steps:
        nxt = concrete.step(state, inst)
        if nxt is None:
            break
        state = nxt
    return state


def _when(concrete: Concrete, res: WalkResult, state: State, r: int) -> str:
    if r < 0:
        return ""
    if res.stalls and res.stalls[-1] == len(res.steps):
        return " when time passes past its release deadline"
    if res.beats and res.beats[-1] == len(res.steps):
        return " when time passes with every heartbeat delivered"
    mine = [s.action for s in res.steps if s.args and s.args[0] == r]
    when = WHEN.get(mine[-1], f"after `{mine[-1]}`") if mine else ""
    pages = concrete.inst.sizes["Page"]
    writing = any(concrete.value(state, "inflight", (r, p)) for p in range(pages))
    tail = " while prefill is still writing them" if writing else ""
    return (" " + when if when else "") + tail


def _pages(n: int) -> str:
    return f"{n} page" + ("" if n == 1 else "s")


def _said(m: Mismatch) -> tuple[str, str]:
    """(what the code did, what the model does instead)."""
    r = f"r{m.request}"
    model, code = m.model, m.code
    if m.what == "pages":
        freed = len(set(model) - set(code))
        if freed and set(code) <= set(model):
            return f"frees {r}'s {_pages(freed)}", "holds them"
        kept = len(set(code) - set(model))
        return f"still holds {r}'s {_pages(kept or len(code))}", "has freed them"
    if m.what == "aborted":
        return (f"aborts {r}", "does not") if code else (f"does not abort {r}", "aborts it")
    if m.what == "committed":
        if code:
            return f"commits {r}'s transfer", "does not"
        return f"does not commit {r}'s transfer", "commits it (prefill reported Success)"
    if m.what == "intake":
        return _intake(code, f"{r}'s over-long prompt"), _intake(model, "it")
    if m.what == "admission":
        return _admitted(code, f"{r}'s prompt"), _admitted(model, "it")
    if m.what in ("source", "source_freed_in_flight"):
        return _source(m, r)
    if m.what == "stray":
        return f"lets a write land on page(s) {code} its writer no longer owns", f"has {model}"
    return f"has {r} {m.what} = {code}", f"has {model}"


def _source(m: Mismatch, r: str) -> tuple[str, str]:
    """Prefill's source blocks: freed before the transfer ended, or under a read or write
    of them still in flight (``projection.RequestView.source``)."""
    if m.what == "source_freed_in_flight":
        if m.code:
            return f"frees {r}'s source blocks on prefill under an in-flight read or write", (
                "frees none under a transfer"
            )
        return f"frees {r}'s source blocks with no read or write in flight", "frees them under one"
    if not m.code and m.model:
        return f"frees {r}'s source blocks on prefill before its transfer ended", "holds them"
    return f"has {r} source = {m.code}", f"has {m.model}"


def _intake(x: Any, what: str) -> str:
    return {
        "retired": f"retires {what} at intake",
        "stub": f"queues {what} as the 1-token stub",
        "queued": f"queues {what} whole",
    }.get(x, f"has {what} {x}")


def _admitted(x: Any, what: str) -> str:
    return {
        "retired": f"retires {what} at decode's admission",
        "queued": f"queues {what} for decode's pre-allocation",
    }.get(x, f"has {what} admission {x}")
