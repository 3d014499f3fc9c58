"""A small DSL for transition systems over sorts (requests, pages).

A protocol declares sorts, enumerations, state variables (relations and functions over
sorts, with boolean or enumerated values), parameterised actions and invariants. Each
action is a plain Python function over a context ``s`` (see ``model/lang/context.py``); it is
written once and run by three interpreters:

- concrete (``model/lang/concrete.py``): sort elements are ints, values are Python values;
- finite symbolic (``model/lang/unroll.py``): sort elements are ints, state cells are Z3 terms
  (bounded model checking);
- unbounded symbolic (``model/search/induction.py``): sorts are uninterpreted Z3 sorts, state
  variables are Z3 functions, quantifiers are real (proofs for any number of elements).

Action bodies never branch in Python on state: they use ``s.ite``, ``s.and_``, ...; they
may branch on the variant's switches, which are plain values the protocol's builder closes
over (``build_handoff(sw)``). Updates (``s.set``, ``s.update``) mean one thing everywhere:
``model.context.apply_ops``, which every interpreter calls.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvproof.spec.errors import KvproofInputError

if TYPE_CHECKING:
    from kvproof.model.lang.liveness import Fair, Liveness

BOOL = "bool"


@dataclass(frozen=True)
class Enum:
    """A finite enumeration of named values; the first value is the default."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Var:
    """A state variable: ``name(args...) -> kind``.

    ``rigid`` variables never change and are chosen freely in the initial state (subject to
    the protocol's init constraint); ``ghost`` variables record history for invariants and
    are not part of an engine's state.
    """

    name: str
    args: tuple[str, ...]
    kind: str | Enum = BOOL
    rigid: bool = False
    ghost: bool = False
    doc: str = ""

    @property
    def default(self) -> Any:
        return self.kind.values[0] if isinstance(self.kind, Enum) else False


class ActionKind(enum.Enum):
    """Who takes an action: the system under check, or its environment.

    ENGINE: a step of one of the engine's sides (router, prefill, decode, the transfer
    engine delivering a posted write); liveness may assume it fair. FAULT: the environment
    (a client disconnecting, the network failing, a clock firing, a peer dying); walkers
    inject these on purpose and liveness grants them fairness only through a named
    assumption (a clock that advances makes ``timeout`` eventually fire).
    """

    ENGINE = "engine"
    FAULT = "fault"


@dataclass(frozen=True)
class Action:
    """A parameterised rule. ``kind`` None (protocols written before kinds existed) is
    fine for safety checks, which treat every action alike; what needs the split (walkers'
    fault sets, liveness fairness) asks ``Protocol.faults`` and gets a KvproofInputError
    naming the action."""

    name: str
    params: tuple[str, ...]
    body: Callable[..., None]
    doc: str = ""
    kind: ActionKind | None = None


@dataclass(frozen=True)
class Invariant:
    name: str
    body: Callable[[Any], Any]
    doc: str = ""
    safety: bool = True  # False: a strengthening conjunct used only by proofs


@dataclass
class Protocol:
    """A transition system: the vocabulary and the rules, independent of any engine."""

    name: str
    sorts: tuple[str, ...]
    vars: tuple[Var, ...]
    actions: tuple[Action, ...]
    invariants: tuple[Invariant, ...]
    # Constraint on the initial state beyond defaults (on the rigid variables).
    init: Callable[[Any], Any]
    switches: Any = None
    # Sorts whose elements are interchangeable (initial state and rules symmetric under
    # any permutation): bounded search breaks the symmetry (first use in index order).
    symmetric: tuple[str, ...] = ()
    strengthening: tuple[Invariant, ...] = field(default_factory=tuple)
    # The environment assumptions whose guards this protocol carries (model/handoff/assumptions.py).
    assumptions: tuple[str, ...] = ()
    # The protocol's own words, for generic code that must not know its vocabulary:
    # ``explain(concrete, state, invariant) -> str | None``, a sentence on why ``state``
    # violates it (None: the invariant's doc; ``model/lang/explain.py``) ...
    explain: Callable[[Any, Any, str], str | None] | None = None
    # ... the variables whose true cells mean a request still holds a resource (a terminal
    # state with one is a deadlock; ``model/search/explore.py``) ...
    holding: tuple[str, ...] = ()
    # ... and the symmetric sort explicit-state search canonicalises by default.
    explore_symmetry: tuple[str, ...] = ()
    # Liveness properties (``model/lang/liveness.py``: always trigger -> eventually goal),
    # checked by ``kvproof check --liveness``; and the weak-fairness obligations beyond the
    # engine's own steps (a fault a fairness assumption makes fair, a state-dependent
    # engine rule): ``liveness.fairness`` joins both.
    liveness: tuple[Liveness, ...] = ()
    fair: tuple[Fair, ...] = ()

    @property
    def enums(self) -> tuple[Enum, ...]:
        """The enumerations the state variables use, each once, in first-use order."""
        seen = {v.kind.name: v.kind for v in self.vars if isinstance(v.kind, Enum)}
        return tuple(seen.values())

    def var(self, name: str) -> Var:
        for v in self.vars:
            if v.name == name:
                return v
        raise KeyError(name)

    def action(self, name: str) -> Action:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(name)

    def _of_kind(self, kind: ActionKind) -> frozenset[str]:
        for a in self.actions:
            if a.kind is None:
                raise KvproofInputError(
                    f"action {a.name!r} declares no kind (Action(..., kind=ActionKind.ENGINE "
                    "or ActionKind.FAULT)): needed to tell engine steps from faults",
                    where=f"protocol {self.name!r}",
                )
        return frozenset(a.name for a in self.actions if a.kind is kind)

    @property
    def faults(self) -> frozenset[str]:
        """The environment's actions (every action must declare its kind)."""
        return self._of_kind(ActionKind.FAULT)

    @property
    def engine_steps(self) -> frozenset[str]:
        """The engine's own actions (every action must declare its kind)."""
        return self._of_kind(ActionKind.ENGINE)

    @property
    def safety(self) -> tuple[Invariant, ...]:
        return tuple(i for i in self.invariants if i.safety)

    def invariant(self, name: str) -> Invariant:
        for i in self.invariants + self.strengthening:
            if i.name == name:
                return i
        raise KeyError(name)
