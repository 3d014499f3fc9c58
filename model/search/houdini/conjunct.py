"""What every Houdini strategy works on: named conjuncts, evaluated concretely, asked of a step.

A conjunct is a candidate clause (``model/search/candidates.py``) or one of the protocol's
safety invariants; ``Checker`` evaluates either on a state of any instance; ``Step`` is what
a strategy asks of an encoding (``model/search/step.py``: uninterpreted sorts, or one finite
instance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import Protocol as TypingProtocol

import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.search.candidates import Clause, Evaluator
from kvproof.model.search.induction import ProofError
from kvproof.model.search.step import Cex


@dataclass
class Conjunct:
    """A named conjunct: a candidate clause, or one of the protocol's safety invariants."""

    name: str
    inv: Invariant
    clause: Clause | None = None

    @property
    def safety(self) -> bool:
        return self.clause is None

    @property
    def size(self) -> int:
        return len(self.clause.cube) if self.clause else 0


class Checker:
    """Concrete evaluation of conjuncts on states of any instance (cached per size)."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._by_size: dict[tuple[tuple[str, int], ...], tuple[Concrete, Evaluator]] = {}

    def get(self, sizes: dict[str, int]) -> tuple[Concrete, Evaluator]:
        key = tuple(sorted(sizes.items()))
        got = self._by_size.get(key)
        if got is None:
            concrete = Concrete(Instance(self.protocol, sizes))
            got = self._by_size[key] = (concrete, Evaluator(concrete))
        return got

    def holds(self, c: Conjunct, sizes: dict[str, int], state: State) -> bool:
        concrete, ev = self.get(sizes)
        if c.clause is not None:
            return ev.holds(c.clause, state.data)
        return concrete.check(c.inv, state)

    def post(self, cex: Cex) -> State:
        concrete, _ = self.get(cex.sizes)
        post = concrete.step(cex.pre, cex.action)
        if post is None:
            raise ProofError(f"Houdini counterexample: {cex.action} is not enabled concretely")
        return post


class Step(TypingProtocol):
    """What Houdini asks of an encoding (``model/search/step.py``)."""

    solver: z3.Solver
    small: Any  # an assumption bounding each sort, or None

    def formula(self, c: Conjunct, post: bool) -> Any: ...
    def cex(self, model: z3.ModelRef) -> Cex: ...
