"""A finite instance of a protocol: how many elements each sort has, and cell layout.

Both the concrete interpreter and the bounded unroller store a state as one tuple of
values per variable, flattened row-major over the variable's argument sorts.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from kvproof.model.lang.dsl import Action, Protocol, Var


@dataclass(frozen=True)
class ActionInstance:
    """An action with concrete arguments, e.g. ``alloc(r1, p3)``."""

    action: str
    args: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.action}({', '.join(map(str, self.args))})"


class Instance:
    def __init__(self, protocol: Protocol, sizes: dict[str, int]) -> None:
        missing = set(protocol.sorts) - set(sizes)
        if missing:
            raise ValueError(f"no size for sorts {sorted(missing)}")
        self.protocol = protocol
        self.sizes = dict(sizes)
        self.var_index = {v.name: i for i, v in enumerate(protocol.vars)}

    def shape(self, var: Var) -> tuple[int, ...]:
        return tuple(self.sizes[s] for s in var.args)

    def cells(self, var: Var) -> list[tuple[int, ...]]:
        """Every argument tuple of ``var`` in flattening order."""
        return list(itertools.product(*(range(n) for n in self.shape(var))))

    def strides(self, var: str) -> tuple[int, ...]:
        """Row-major strides of ``var``'s cells over its argument sorts."""
        return self._strides[var]

    @cached_property
    def _strides(self) -> dict[str, tuple[int, ...]]:
        out = {}
        for v in self.protocol.vars:
            shape = self.shape(v)
            strides = []
            acc = 1
            for n in reversed(shape):
                strides.append(acc)
                acc *= n
            out[v.name] = tuple(reversed(strides))
        return out

    def flat(self, var: str, args: tuple[int, ...]) -> int:
        return sum(a * s for a, s in zip(args, self._strides[var], strict=True))

    def instances(self, action: Action) -> Iterator[ActionInstance]:
        ranges = [range(self.sizes[s]) for s in action.params]
        for args in itertools.product(*ranges):
            yield ActionInstance(action.name, args)

    @cached_property
    def all_instances(self) -> list[ActionInstance]:
        return [i for a in self.protocol.actions for i in self.instances(a)]

    def describe(self, var: str, args: tuple[int, ...]) -> str:
        names = self.protocol.var(var).args
        inner = ", ".join(f"{_prefix(s)}{a}" for s, a in zip(names, args, strict=True))
        return f"{var}({inner})" if names else var


def _prefix(sort: str) -> str:
    """An element's name: the sort's initial, lower case (``Req`` 0 is ``r0``)."""
    return sort[:1].lower()


def element_name(sort: str, index: int) -> str:
    return f"{_prefix(sort)}{index}"
