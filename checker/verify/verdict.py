"""One variant's verdict: what each phase of ``check`` found, as one typed record.

``driver.py`` fills it phase by phase (``plan.py``); renderers read it and compute nothing
(``checker/render/check*.py``): ``--json``, JUnit, SARIF and the HTML pages come from this
record, and every counterexample in it carries its states, derived once where the search
re-checked it (``InvariantResult.states``, ``LassoResult.states``), so no renderer replays.
The protocols are the one thing that does not cross a process: a worker drops them, and the
parent attaches its own (``with_protocols``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kvproof.model.lang.dsl import Protocol
from kvproof.spec.variant import Variant

if TYPE_CHECKING:  # the searches are imported only when a check runs them
    from kvproof.checker.verify.liveness import LivenessCheck
    from kvproof.model.search.bmc import BmcResult
    from kvproof.model.search.complete import CompleteResult
    from kvproof.model.search.induction import ProofResult

SettledBy = Literal["bmc", "proof"]


@dataclass(frozen=True)
class CompleteRun:
    """The complete search's answer, and why it ran (``plan.py``'s reasons)."""

    reason: str  # "requested" | "variant" | "fallback"
    result: CompleteResult
    command: str | None = None  # what would decide an "unknown", with its budget

    def to_json(self) -> dict[str, Any]:
        out = self.result.to_json()
        out["reason"] = self.reason
        if self.command is not None:
            out["settle"] = self.command
        return out

    @property
    def summary(self) -> str:
        if self.command is None:
            return self.result.summary
        return f"{self.result.summary}; to decide it run: {self.command}"


@dataclass(frozen=True)
class Necessity:
    """Whether a guard assumption in force is needed (``driver.py``'s necessity phase)."""

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


@dataclass(frozen=True)
class VariantVerdict:
    variant: Variant
    protocol: Protocol | None = None  # the protocol the safety phases checked
    invariants: BmcResult | None = None  # None: a liveness-only check
    proof: ProofResult | None = None
    necessity: tuple[Necessity, ...] = ()  # per guard assumption in force
    complete: CompleteRun | None = None
    liveness: LivenessCheck | None = None
    without: tuple[str, ...] = ()  # assumptions dropped (--without)
    # Which engine settled the safety verdict: "bmc" (a counterexample, or none to the
    # depth) or "proof" (the unbounded proof: no counterexample at any depth or size).
    settled_by: SettledBy = "bmc"
    files: tuple[Path, ...] = ()  # traces and pages written for it

    @property
    def bmc(self) -> BmcResult:
        assert self.invariants is not None, "a liveness-only check has no BMC"
        return self.invariants

    def verdict(self, inv: str) -> str:
        return "holds" if self.bmc.result(inv).holds else "violated"

    def matches(self, inv: str) -> bool:
        if inv not in {r.invariant for r in self.bmc.results}:
            return True
        expected = self.variant.expect.get(inv)
        return expected is None or expected == self.verdict(inv)

    @property
    def safety_match(self) -> bool:
        """Every invariant's verdict (and a fixed variant's proof) as ``[expect]`` says."""
        if self.invariants is None:
            return True
        ok = all(self.matches(r.invariant) for r in self.invariants.results)
        if self.proof is not None and not self.variant.buggy:
            ok = ok and self.proof.proved
        return ok

    @property
    def all_match(self) -> bool:
        """``--all``'s rule: safety, the complete search and liveness as expected."""
        live = self.liveness is None or self.liveness.all_match
        return self.safety_match and not self.mismatch and live

    @property
    def safety_violated(self) -> bool:
        if self.invariants is None:
            return False
        return not self.invariants.holds or (self.proof is not None and not self.proof.proved)

    @property
    def violated(self) -> bool:
        """Anything violated: BMC's, the proof's, the complete search's or a fair lasso."""
        live = self.liveness is not None and self.liveness.violated
        return self.safety_violated or self.complete_violated or live

    @property
    def complete_violated(self) -> bool:
        return self.complete is not None and self.complete.result.verdict == "violated"

    @property
    def mismatch(self) -> bool:
        """A complete counterexample to an invariant expected to hold (a buggy variant's
        expected violation is not one)."""
        if not self.complete_violated:
            return False
        assert self.complete is not None
        trace = self.complete.result.trace
        broken = trace.violated if trace is not None else None
        return broken is not None and self.variant.expect.get(broken) == "holds"

    def with_protocols(self, protocol: Protocol | None, lively: Protocol | None) -> VariantVerdict:
        """This verdict with the protocols built here; (None, None): plain data for another
        process, the protocols (closures) left behind."""
        live = self.liveness and dataclasses.replace(self.liveness, protocol=lively)
        return dataclasses.replace(self, protocol=protocol, liveness=live)
