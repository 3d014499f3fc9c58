"""What Houdini (``houdini.py``) works on, evaluated on concrete states: named conjuncts.

A conjunct is a candidate clause (``candidates.py``) or one of the protocol's safety
invariants; ``Checker`` evaluates either on a state of any instance (``Evaluator``: one
clause on one state, in Python). Houdini on a finite instance evaluates hundreds of clauses
on every state it meets (each counterexample's successors, and theirs), so ``ClauseTable``
compiles each clause once into arrays of cell indices and values, one row per assignment of
its quantified variables, and a state is one int vector: a clause is broken where some
row's cells all hold its values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.search.candidates import Clause, Evaluator, cell_codes, ground
from kvproof.model.search.induction import ProofError
from kvproof.model.search.step import Cex


class ClauseTable:
    """``broken(data)``: which of ``clauses`` the state ``data`` (``State.data``) breaks."""

    def __init__(self, concrete: Concrete, clauses: Sequence[Clause]) -> None:
        self.n = len(clauses)
        offsets, self._codes = cell_codes(concrete)
        # One group per clause length: (clause positions, cells[c, env, lit], values[...]).
        groups: dict[int, list[tuple[int, list[list[int]], list[list[int]]]]] = {}
        for pos, c in enumerate(clauses):
            plan = ground(concrete.inst, c)
            cells = [[offsets[i] + j for i, j, _ in cube] for cube in plan]
            values = [[self._codes[i][v] for i, _, v in cube] for cube in plan]
            groups.setdefault(len(c.cube), []).append((pos, cells, values))
        self._groups = []
        for rows in groups.values():
            most = max(len(cells) for _, cells, _ in rows)
            # Pad with copies of a clause's first row: a repeated row changes no answer.
            cells_a = np.array([c + [c[0]] * (most - len(c)) for _, c, _ in rows], dtype=np.int64)
            values_a = np.array([v + [v[0]] * (most - len(v)) for _, _, v in rows], dtype=np.int8)
            where = np.array([pos for pos, _, _ in rows], dtype=np.int64)
            self._groups.append((where, cells_a, values_a))

    def broken(self, data: Any) -> np.ndarray:
        """A boolean array over the clauses: True where ``data`` breaks the clause."""
        flat = np.fromiter(
            (codes[x] for codes, row in zip(self._codes, data, strict=True) for x in row),
            dtype=np.int8,
        )
        out = np.zeros(self.n, dtype=bool)
        for where, cells, values in self._groups:
            out[where] = (flat[cells] == values).all(axis=2).any(axis=1)
        return out


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
        self._by_size: dict[tuple[tuple[str, int], ...], Evaluator] = {}

    def get(self, sizes: dict[str, int]) -> Evaluator:
        key = tuple(sorted(sizes.items()))
        got = self._by_size.get(key)
        if got is None:
            got = self._by_size[key] = Evaluator(Concrete(Instance(self.protocol, sizes)))
        return got

    def holds(self, c: Conjunct, sizes: dict[str, int], state: State) -> bool:
        ev = self.get(sizes)
        if c.clause is not None:
            return ev.holds(c.clause, state.data)
        return ev.concrete.check(c.inv, state)

    def post(self, cex: Cex) -> State:
        post = self.get(cex.sizes).concrete.step(cex.pre, cex.action)
        if post is None:
            raise ProofError(f"Houdini counterexample: {cex.action} is not enabled concretely")
        return post
