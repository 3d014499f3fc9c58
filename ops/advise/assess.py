"""A catalog variant's verdicts for an operator: safety (``check``'s library call, with
each assumption's necessity), liveness, and every counterexample told in engine words.

Verdicts are per variant, so one assessment serves every release and setting that match it
(``assess`` is cached by name for the length of a process).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kvproof.checker.report.engine_words import story, voice_of
from kvproof.spec.assumptions import ASSUMPTIONS, FAIRNESS, GUARD
from kvproof.spec.variant import load_variant


@dataclass(frozen=True)
class Finding:
    """One property's verdict; a violated one with its counterexample."""

    name: str
    kind: str  # "safety" | "liveness"
    verdict: str  # "holds" | "violated"
    steps: int | None = None
    story: str | None = None  # the counterexample in engine words
    rows: tuple[dict[str, Any], ...] = ()  # the model's steps (--json, --raw)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "verdict": self.verdict}
        if self.verdict == "violated":
            out.update(steps=self.steps, story=self.story, trace=list(self.rows))
        return out


@dataclass(frozen=True)
class Assumed:
    """An assumption the verdicts rest on, and what happens without it."""

    name: str
    kind: str  # GUARD (safety) | FAIRNESS (liveness)
    text: str  # the declared sentence (spec/assumptions.py)
    why: str  # the variant's reason it holds for this engine
    needed: bool | None
    without_it: str | None = None  # the property violated without it
    steps: int | None = None
    story: str | None = None  # that counterexample in engine words

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "why"}


@dataclass(frozen=True)
class Assessment:
    variant: str
    engine: str
    push: bool
    findings: tuple[Finding, ...]
    assumptions: tuple[Assumed, ...]

    @property
    def safe(self) -> bool:
        return all(f.verdict == "holds" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "engine": self.engine,
            "push": self.push,
            "safe": self.safe,
            "verdicts": [f.to_json() for f in self.findings],
            "assumptions": [a.to_json() for a in self.assumptions],
        }


def _told(
    protocol: Any, trace: Any, voice: Any, states: Any = ()
) -> tuple[str, tuple[dict[str, Any], ...]]:
    """``states``: the trace's, as the search derived them (none: replayed here)."""
    from kvproof.checker.render.check_json import initial_facts
    from kvproof.checker.report.trace_view import trace_explanation, trace_rows

    rows = trace_rows(protocol, trace, states)
    why = trace_explanation(protocol, trace, states)
    return story(rows, why, voice, initial_facts(trace)), tuple(rows)


@lru_cache(maxsize=32)
def assess(name: str) -> Assessment:
    """The variant ``name``'s verdicts under its assumptions, and each assumption's price."""
    from kvproof.checker.runs.check_run import CheckOptions, check
    from kvproof.checker.verify.liveness import check_liveness
    from kvproof.checker.verify.protocols import protocol_for

    variant = load_variant(name)
    voice = voice_of(variant.engine, variant.switches.transfer_mode)
    run = check([name], options=CheckOptions(workers=1)).variants[0]
    found: list[Finding] = []
    for r in run.bmc.results:
        if r.holds:
            found.append(Finding(r.invariant, "safety", "holds"))
            continue
        told, rows = _told(run.protocol, r.trace, voice, r.states)
        found.append(Finding(r.invariant, "safety", "violated", r.shortest, told, rows))
    lively = check_liveness(variant, protocol_for(variant, liveness=True))
    for lasso in lively.result.results:
        if lasso.holds:
            found.append(Finding(lasso.property, "liveness", "holds"))
            continue
        assert lasso.trace is not None  # a violated property has its lasso
        told, rows = _told(lively.protocol, lasso.trace, voice, lasso.states)
        found.append(Finding(lasso.property, "liveness", "violated", len(lasso.trace), told, rows))
    notes: list[Assumed] = []
    for need in run.necessity:
        said: str | None = None
        if need.trace is not None:
            said, _ = _told(protocol_for(variant, None, (need.name,)), need.trace, voice)
        info = ASSUMPTIONS[need.name]
        notes.append(
            Assumed(
                need.name,
                GUARD,
                info.text,
                variant.assume[need.name],
                need.needed,
                need.invariant,
                need.steps,
                said,
            )
        )
    for fair in lively.necessity:
        info = ASSUMPTIONS[fair.name]
        notes.append(
            Assumed(
                fair.name, FAIRNESS, info.text, variant.assume[fair.name], fair.needed, fair.hides
            )
        )
    push = variant.switches.transfer_mode != "pull"
    return Assessment(name, variant.engine, push, tuple(found), tuple(notes))
