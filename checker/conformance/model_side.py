"""The model's half of a lockstep, built once and shared by every walk of a fuzz batch.

A ``Lockstep`` needs the variant's protocol, its concrete interpreter, and (when the variant
assumes something) the same rules without the assumptions. Building them compiles the DSL
into straight-line Python per action instance (``model/lang/compiled.py``): done per walk,
that compile was about a sixth of a fuzz walk's time (issue 30, cProfile of a batch).
The interpreters hold no walk's state (states are values passed in and out), so one
``ModelSide`` serves any number of walks of the same variant, sizes and build.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.spec.variant import Variant


@dataclass(frozen=True)
class ModelSide:
    variant: str
    sizes: tuple[tuple[str, int], ...]
    liveness: bool
    protocol: Protocol
    concrete: Concrete
    # The rules without the variant's assumptions: a step only they forbid is one the
    # assumed environment never takes (the engine itself may well allow it).
    unassumed: Concrete | None
    actions: frozenset[str]

    @classmethod
    def of(cls, variant: Variant, sizes: dict[str, int], *, liveness: bool = False) -> ModelSide:
        protocol = protocol_of(variant, liveness=liveness)
        unassumed = None
        if variant.assume:
            bare = protocol_of(variant, assumed=False, liveness=liveness)
            unassumed = Concrete(Instance(bare, sizes))
        return cls(
            variant.name,
            tuple(sorted(sizes.items())),
            liveness,
            protocol,
            Concrete(Instance(protocol, sizes)),
            unassumed,
            frozenset(a.name for a in protocol.actions),
        )

    def serves(self, variant: Variant, sizes: dict[str, int], liveness: bool) -> bool:
        """Built for this variant, these sizes and this build (a caller's mix-up would
        otherwise check one variant's engine against another's rules)."""
        key = (variant.name, tuple(sorted(sizes.items())), liveness)
        return key == (self.variant, self.sizes, self.liveness)
