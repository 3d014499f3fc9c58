"""Witnesses: longer counterexamples for a sharper target than an invariant.

BMC's shortest counterexample breaks an invariant of the model; it need not be the run in
which a *client* sees the bug. Decode's radix-cache race (SGLang #38319) is the case: its
17-step isolation trace has two requests, and the page freed while the tree still maps it
is overwritten by the hit request's own later chunk, so the engine answers with its own KV
at the wrong position (a wrong answer, no other tenant's data). Another tenant's KV in the
shared page needs a third request, four steps more than any isolation trace.

A witness names that target as a predicate on the model's state (here: a request reads a
page it shares from the tree while the page holds another request's KV) and is found by
breadth-first search (``model.explore``: deterministic, so the stored file is the same
every time, and shortest by construction). The trace's last state must break the
invariant the witness illustrates, checked here on the variant's own protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, replay
from kvproof.model.search.explore import explore


def _no_foreign_shared_read(s: Any) -> Any:
    """No request has read a page it shares from the radix tree while the page held KV of
    another request of the instance (the negation is the target)."""
    return s.not_(
        s.exists(
            "Req",
            lambda r: s.exists(
                "Page",
                lambda p: s.exists(
                    "Req",
                    lambda q: s.and_(s.leaked(r), s.shares(r, p), s.ne(q, r), s.holds(p, q)),
                ),
            ),
        )
    )


@dataclass(frozen=True)
class Witness:
    variant: str
    name: str  # the file is ``<variant>.<invariant>.<name>.jsonl``
    invariant: str  # the invariant its last state breaks
    sizes: dict[str, int]
    target: Callable[[Any], Any]  # a state predicate that must become false
    why: str

    @property
    def stem(self) -> str:
        return f"{self.variant}.{self.invariant}.{self.name}"

    def find(self, protocol: Protocol) -> Trace:
        """The shortest run to the target (a ``RuntimeError`` if none: the model changed)."""
        sharp = replace(protocol, invariants=(Invariant(self.name, self.target),))
        # Both symmetric sorts (requests and pages) and a stop at the first target state:
        # BFS numbers states in the same order either way, so the trace is the one the
        # whole search would report, in a fraction of the states (issue #30).
        sym = tuple(s for s in protocol.symmetric if self.sizes.get(s, 0) > 1)
        found = explore(
            sharp,
            self.sizes,
            variant=self.variant,
            stop_at_violation=True,
            until_found=True,
            symmetry=sym,
        )
        trace = found.counterexamples.get(self.name)
        if trace is None:
            raise RuntimeError(f"witness {self.stem}: no run reaches the target")
        trace = replace(trace, violated=self.invariant)
        concrete = Concrete(Instance(protocol, self.sizes))
        last = replay(trace, concrete)[-1]
        if self.invariant not in concrete.violated(last):
            raise RuntimeError(f"witness {self.stem}: its last state keeps {self.invariant}")
        return trace


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "sglang-pd-decode-radix-race",
        "foreign",
        "isolation",
        {"Req": 3, "Page": 2},
        _no_foreign_shared_read,
        "a third request, of another application, is handed the page the tree still maps "
        "and writes its own KV there; the hit request reads it as its prompt's head",
    ),
)
