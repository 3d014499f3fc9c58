"""Is each assumption of a verdict needed? Drop it and look for what it was hiding.

An assumption is *needed* when dropping it breaks an invariant that held with it (BMC
finds the counterexample, at the check's sizes and depth), and *unnecessary* when
dropping it changes nothing: every invariant that held still holds to the depth, and
(for a fixed variant) the unbounded proof still goes through. When the proof fails
without it but BMC finds no counterexample, the answer is *undetermined*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.model.search.bmc import bmc
from kvproof.spec.variant import Variant


@dataclass(frozen=True)
class Necessity:
    name: str
    needed: bool | None  # None: undetermined
    detail: str
    invariant: str | None = None  # the invariant that breaks without it
    steps: int | None = None  # the counterexample's length
    trace: Any = None  # kvproof.model.lang.trace.Trace of that counterexample

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"needed": self.needed, "needed_detail": self.detail}
        if self.invariant is not None:
            out["without_it"] = {"violated": self.invariant, "steps": self.steps}
        return out


def necessity(
    variant: Variant,
    name: str,
    protocol_without: Callable[[tuple[str, ...]], Any],
    *,
    dropped: tuple[str, ...],
    holding: list[str],
    sizes: dict[str, int],
    depth: int,
    prove_it: bool,
) -> Necessity:
    """``protocol_without(names)`` builds the variant's protocol without ``names``;
    ``holding`` are the invariants that held with every assumption in place."""
    protocol = protocol_without((*dropped, name))
    proved_without = None
    if prove_it and protocol.strengthening:
        from kvproof.model.search.induction import prove

        proved_without = prove(protocol).proved
        if proved_without:
            return Necessity(name, False, "unnecessary: the proof goes through without it")
    if holding:
        result = bmc(
            protocol,
            sizes,
            depth,
            variant=f"{variant.name}--without-{name}",
            invariants=holding,
            primary=False,
            stop_at_first=True,
        )
        broken = [r for r in result.results if not r.holds]
        if broken:
            first = min(broken, key=lambda r: r.shortest or r.depth)
            return Necessity(
                name,
                True,
                f"needed: without it {first.invariant} is violated in {first.shortest} steps",
                first.invariant,
                first.shortest,
                first.trace,
            )
    if proved_without is False:
        return Necessity(
            name,
            None,
            f"undetermined: no counterexample to depth {depth} without it, but the proof"
            " does not go through",
        )
    return Necessity(
        name, False, f"unnecessary: every invariant still holds to depth {depth} without it"
    )
