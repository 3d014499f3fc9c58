"""``check --json``: a pure function of the run's record, the one serializer of a verdict.

The JUnit and SARIF reports (``check_gate.py``) and the text report (``check_text.py``) read
the same document. Each counterexample's rows and explanation come from the states it
carries (``VariantVerdict``): nothing here replays a trace the search already checked. The
shape is stable (README; ``tests/checker/golden/check_all.json`` pins it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvproof import __version__
from kvproof.checker.report.trace_view import statement, trace_explanation, trace_rows
from kvproof.checker.verify.liveness import LivenessCheck
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.model.lang.trace import Trace
from kvproof.spec.assumptions import ASSUMPTIONS, FAIRNESS, GUARD, of_kind
from kvproof.spec.invariants import INVARIANTS
from kvproof.spec.variant import Variant

if TYPE_CHECKING:
    from kvproof.checker.runs.check_run import CheckRun


def run_json(run: CheckRun) -> Any:
    return document(run, [variant_json(v) for v in run.variants])


def document(run: CheckRun, docs: list[dict[str, Any]]) -> Any:
    """The variants' objects as one document: one object for one variant, a list for
    ``--all`` or several."""
    return docs if (run.gate or len(docs) > 1) else docs[0]


def variant_json(v: VariantVerdict) -> dict[str, Any]:
    if v.invariants is None:  # a liveness-only check
        assert v.liveness is not None
        doc: dict[str, Any] = {"variant": v.variant.name, "liveness": liveness_json(v.liveness)}
    else:
        doc = safety_json(v)
        if v.complete is not None:
            doc["complete"] = v.complete.to_json()
            done = v.complete.result
            if done.trace is not None:
                assert v.protocol is not None
                doc["complete"]["trace"] = trace_rows(v.protocol, done.trace, done.trace_states)
    if v.files:
        doc["files"] = [str(f) for f in v.files]
    if v.invariants is not None and v.liveness is not None:
        doc["liveness"] = liveness_json(v.liveness)
    return doc


def safety_json(v: VariantVerdict) -> dict[str, Any]:
    bmc, protocol = v.bmc, v.protocol
    assert protocol is not None
    out: dict[str, Any] = {
        "kvproof_version": __version__,
        "variant": v.variant.name,
        "sizes": bmc.sizes,
        "depth": bmc.depth,
        "seconds": round(bmc.seconds, 4),
        "verdict": "violated" if v.safety_violated else "holds",
        "settled_by": v.settled_by,
        "matches_expectation": v.safety_match,
        "assumptions": assumptions_json(v.variant, v.without, v.necessity),
        "without": list(v.without),
        "invariants": [],
    }
    for r in bmc.results:
        info = INVARIANTS.get(r.invariant)
        entry: dict[str, Any] = {
            "name": r.invariant,
            "number": info.number if info else None,
            "statement": statement(protocol, r.invariant),
            "verdict": "holds" if r.holds else "violated",
            "expected": v.variant.expect.get(r.invariant),
            "matches": v.matches(r.invariant),
            "depth": r.depth,
            # "proof": holds at every depth and size, BMC having looked only to "depth"
            "settled_by": "proof"
            if r.holds and (v.settled_by == "proof" or r.invariant in bmc.proved)
            else "bmc",
            "seconds": round(r.seconds, 4),
        }
        if r.trace is not None:
            entry["shortest"] = r.shortest
            entry["primary"] = r.primary
            entry["explanation"] = trace_explanation(protocol, r.trace, r.states)
            entry["initial"] = initial_facts(r.trace)
            entry["trace"] = trace_rows(protocol, r.trace, r.states)
            if r.trace.loop is not None:
                entry["loop"] = r.trace.loop
        out["invariants"].append(entry)
    if v.proof is not None:
        out["proof"] = v.proof.to_json()
    return out


def liveness_json(check: LivenessCheck) -> dict[str, Any]:
    """The ``"liveness"`` key: the fair-lasso search's verdict per property."""
    result, protocol = check.result, check.protocol
    assert protocol is not None
    by = {n.name: n for n in check.necessity}
    out: dict[str, Any] = {
        "sizes": result.sizes,
        "engine": result.engine,
        "complete": result.complete,
        "states": result.states,
        "seconds": round(result.seconds, 4),
        "verdict": "violated" if check.violated else "holds",
        "matches_expectation": check.all_match,
        "fairness": list(result.fair),
        "assumptions": [
            {"name": n, "active": n not in check.without, **(by[n].to_json() if n in by else {})}
            for n in of_kind(check.variant.assume, FAIRNESS)
        ],
        "properties": [],
    }
    docs = {p.name: p.doc for p in protocol.liveness}
    for r in result.results:
        entry: dict[str, Any] = {
            "name": r.property,
            "statement": docs.get(r.property, ""),
            "verdict": "holds" if r.holds else "violated",
            "expected": check.variant.expect_liveness.get(r.property),
            "matches": check.matches(r.property),
        }
        if r.trace is not None:
            entry["instance"] = r.trace.meta.get("instance")
            entry["loop"] = r.trace.loop
            entry["trace"] = trace_rows(protocol, r.trace, r.states)
        out["properties"].append(entry)
    return out


def assumptions_json(variant: Variant, without: tuple[str, ...], found: Sequence[Any]) -> list:
    """The ``"assumptions"`` entries: declared text and source, why the variant relies on
    it, whether it was in force, and (when assessed) whether needed."""
    from kvproof.model.handoff.assumptions import declared

    by_name = {n.name: n for n in found}
    out = []
    for entry in declared(variant.assume):
        name = entry["name"]
        entry["why"] = variant.assume[name]
        entry["active"] = name not in without
        # fairness (issue #29): no safety verdict depends on it; the liveness phase assesses it
        entry["kind"] = ASSUMPTIONS[name].kind if name in ASSUMPTIONS else GUARD
        if name in by_name:
            entry.update(by_name[name].to_json())
        out.append(entry)
    return out


# The initial state's free choices a request's facts name (``hit``: issue 12 item 3).
_FACTS = {
    "over_p": "prompt over prefill's limit",
    "over_d": "prompt over decode's limit",
    "hit": "decode's prefix cache holds the prompt's head",
}


def initial_facts(trace: Trace) -> list[str]:
    """The free choices of the initial state that matter, e.g. 'r0: over prefill limit'."""
    facts = []
    for r in sorted({a for inst in trace.steps for a in inst.args[:1]}):
        bits = [said for var, said in _FACTS.items() if trace.init.get(var, {}).get((r,))]
        facts.append(f"r{r}: " + (", ".join(bits) or "prompt within both limits"))
    return facts
