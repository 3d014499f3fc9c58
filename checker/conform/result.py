"""``ConformRun``: one conform run as plain data (it pickles across a pool or Ray), with
``to_json()`` and ``exit_code``, whichever engine it drove.

Exit codes: 0 the code agrees on every walk, 1 a divergence or an exception raised inside
the engine's code (each written as a trace), 2 bad input (raised as ``KvproofInputError``
before any walk starts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Coverage:
    """Abstract transitions (an action in its request's phase: decode's, prefill's, the
    status decode sees) the walks took, out of those reachable in the model at the run's
    size with the run's events."""

    exercised: int
    reachable: int
    missing: tuple[str, ...] = ()  # reachable, never taken (first few, for the reader)

    @property
    def ratio(self) -> float:
        return self.exercised / self.reachable if self.reachable else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "exercised": self.exercised,
            "reachable": self.reachable,
            "ratio": round(self.ratio, 4),
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class Diagnosis:
    """Which single switch flip makes the divergent trace conform (``diagnose.py``)."""

    headline: str  # the engine developer's sentence
    explained_by: tuple[tuple[str, str], ...] = ()  # (switch, the value the code behaves as)
    first: str | None = None  # the first differing projection (always given)
    # the variant's assumptions without which the walk conforms (when no flip explains it)
    assumptions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "explained_by": [{"switch": s, "value": v} for s, v in self.explained_by],
            "first_difference": self.first,
            "assumptions_contradicted": list(self.assumptions),
        }


@dataclass(frozen=True)
class ConformRun:
    variant: str
    engine: str  # "sglang", "vllm"
    release: str  # the version, or the PATH given
    adapter: str
    env: dict[str, Any]  # what the code ran under (table over the release's defaults)
    env_source: dict[str, str]  # key -> "variant" | "release default"
    walks: int
    steps: int
    seconds: float
    faults: bool = True
    sizes: dict[str, int] = field(default_factory=dict)
    switch: str | None = None  # the switch the code contradicts (first explaining one)
    diagnosis: Diagnosis | None = None
    detail: tuple[str, ...] = ()  # every differing projection at the divergent step
    raised: str | None = None  # an exception inside the engine's code: "Name: msg (at f:l)"
    files: tuple[str, ...] = ()
    decisions: dict[str, int] = field(default_factory=dict)  # summed over walks
    exercised: tuple[str, ...] = ()
    coverage: Coverage | None = None
    trivial: int = 0  # walks that were arrivals only
    events: dict[str, int] = field(default_factory=dict)  # model steps taken, by action
    # Pages decode reserves and prefill sends per prompt kind, as the engine's code counts
    # them (an engine that counts none leaves it empty); each value has ``to_json()``.
    pages: dict[str, Any] = field(default_factory=dict)

    @property
    def diverged(self) -> bool:
        return self.diagnosis is not None or self.raised is not None

    @property
    def exit_code(self) -> int:
        return 1 if self.diverged else 0

    @property
    def verdict(self) -> str:
        if self.raised is not None:
            return "raised"
        return "diverges" if self.diverged else "conforms"

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "engine": self.engine,
            "release": self.release,
            self.engine: self.release,  # "sglang": "0.5.22" (the flag it answers)
            "adapter": self.adapter,
            "verdict": self.verdict,
            "switch": self.switch,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
            "detail": list(self.detail),
            "raised": self.raised,
            "env": self.env,
            "env_source": self.env_source,
            "faults": self.faults,
            "sizes": self.sizes,
            "walks": self.walks,
            "trivial_walks": self.trivial,
            "events": self.events,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "coverage": self.coverage.to_json() if self.coverage else None,
            "decisions": self.decisions,
            "pages": {k: v.to_json() for k, v in self.pages.items()},
            "exercised": list(self.exercised),
            "files": list(self.files),
            "exit_code": self.exit_code,
        }
