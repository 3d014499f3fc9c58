"""After the trace: the engine runs on to quiescence, so that every client gets its answer.

A counterexample stops at the step that breaks an invariant: often a stray write nobody has
read yet, or a commit before the first decode step. Whether a client *sees* it is decided
after that, so replay lets the run finish: every request of the trace arrives, transfers,
commits and decodes up to ``max_new_tokens``; posted writes land; aborts are acknowledged.
No new fault is injected (no fail, timeout, give-up or expiry; an abort only where decode
sees its transfer failed), and the choice is deterministic: completions first, then the
request nearest its answer, the lowest request first, the allocator's own page. A pool too
small for two half-allocated requests stops the drain with those clients unanswered
(``status`` None in the responses). Each step is a model action applied in lockstep
(``Lockstep.apply``), so the drain is checked like the trace; it adds no model violation
to the report (the trace's verdict is the model's), only the clients' answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kvproof.checker.conformance.verdict import Divergence
from kvproof.model.lang.instance import ActionInstance

if TYPE_CHECKING:  # replay imports this module
    from kvproof.checker.conformance.lockstep import Lockstep


def _reacts_to_failed(ls: Lockstep, inst: ActionInstance, rid: int) -> bool:
    """Decode's own answer to a failure the trace already injected (KVPoll Failed) is to
    abort the request: that is no new fault, and it gives the client its answer."""
    return ls.cluster.status(rid).poll == "failed"


# The environment's moves (``Protocol.faults``) are faults the trace may take, never the
# drain; except where the rule for a fault says the engine takes it itself.
REACTIONS: dict[str, Callable[[Lockstep, ActionInstance, int], bool]] = {
    "abort": _reacts_to_failed,
}
# Completions first (a posted write lands; an ABORT is seen and acknowledged), then the
# request closest to its answer: this order lets a late write land before its victim reads.
ORDER: tuple[str, ...] = ("land", "abort_seen", "ack", "abort", "finish", "step", "commit")
ORDER += ("done", "post", "share", "send", "alloc", "arrive")
# Decode's radix cache (issue 12): a hit locks its head page before ``send``; inserting into
# the tree is optional work, taken only when nothing else is enabled.
ORDER += ("insert",)
MAX_STEPS = 10_000


def candidates(ls: Lockstep) -> list[ActionInstance]:
    out = []
    faults = ls.protocol.faults
    for ev in ls.cluster.enabled(alloc="top"):
        inst = ls.rids.action(ev)
        if inst is None or ls.excluded(inst):
            continue
        reacts = REACTIONS.get(inst.action)
        if inst.action in faults and not (reacts and reacts(ls, inst, ev.rid)):
            continue
        if inst.action in ("step", "finish"):
            full = ls.cluster.status(ev.rid).generated >= ls.max_new_tokens
            if full != (inst.action == "finish"):
                continue
        out.append(inst)
    return out


def drain(ls: Lockstep) -> tuple[tuple[str, ...], Divergence | None]:
    """(the steps taken, the divergence that stopped it or None)."""
    taken: list[str] = []
    for _ in range(MAX_STEPS):
        cands = candidates(ls)
        if not cands:
            break
        inst = min(cands, key=lambda i: (ORDER.index(i.action), i.args))
        status, div = ls.apply(inst)
        taken.append(str(inst))
        if status != "ok":  # the engine offered it: a step the model refuses diverges too
            why = "the engine performs it, the model does not enable it (drain)"
            return tuple(taken), div or Divergence(ls.step_no + 1, str(inst), why)
    return tuple(taken), None
