"""Lassos on disk: the checks every trace format shares for ``Trace.loop``.

A lasso's ``steps[loop:]`` must return to the state reached after ``steps[:loop]`` (issue
#29 items 3 and 6): a file whose loop does not close describes no infinite run, so it is
rejected like any other malformed input. An empty loop (``loop`` equal to the number of
steps) is the liveness search's stutter: the run stays in its last state forever, no fair
step being enabled there (``model/search/lasso.py``), which closes by itself.
"""

from __future__ import annotations

from typing import Any

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, replay
from kvproof.spec.errors import KvproofInputError


def check_loop_index(loop: Any, count: int, where: str, unit: str = "steps") -> int | None:
    """``loop`` as read from a file: None, or an int with ``0 <= loop <= count`` for steps
    (``count``: the stutter), ``0 <= loop < count`` for states.

    ``count`` is the trace's number of ``unit``: kvproof's files count steps, ITF counts
    states (``itf.py`` converts)."""
    if loop is None:
        return None
    if not isinstance(loop, int) or isinstance(loop, bool):
        raise KvproofInputError(f"'loop' must be an integer, got {loop!r}", where)
    top = count if unit == "steps" else count - 1
    if not 0 <= loop <= top:
        raise KvproofInputError(
            f"'loop' {loop} is out of range: the trace has {count} {unit} (want 0..{top})",
            where,
        )
    return loop


def check_loop_closes(trace: Trace, protocol: Protocol, where: str) -> None:
    """The state after the last step equals the state at ``loop`` (KvproofInputError if not)."""
    if trace.loop is None:
        return
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = replay(trace, concrete)
    if concrete.as_dict(states[-1]) != concrete.as_dict(states[trace.loop]):
        raise KvproofInputError(
            f"the loop does not close: the state after step {len(trace.steps)} differs from "
            f"the state after step {trace.loop} (where the loop starts)",
            where,
        )
