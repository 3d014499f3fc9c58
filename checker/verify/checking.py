"""``kvproof check`` as a library call: BMC (and proofs) of variants against expectations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof import __version__
from kvproof.checker.verify.forever import lasso_explanation
from kvproof.model.handoff import protocol_of
from kvproof.model.handoff.assumptions import active, apply
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.explain import args_dict, changes, explain, step_label
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, replay
from kvproof.model.search.bmc import BmcResult, bmc
from kvproof.spec.assumptions import ASSUMPTIONS, GUARD, of_kind
from kvproof.spec.invariants import INVARIANTS
from kvproof.spec.names import require_known
from kvproof.spec.variant import Variant

ProtocolFactory = Callable[[Any], Protocol]


@dataclass(frozen=True)
class VariantCheck:
    variant: Variant
    protocol: Protocol
    bmc: BmcResult
    proof: Any = None  # kvproof.model.search.induction.ProofResult when --prove
    without: tuple[str, ...] = ()  # assumptions dropped (--without)
    necessity: tuple[Any, ...] = ()  # kvproof.checker.verify.necessity.Necessity, per assumption
    # Which engine settled the verdict (portfolio.py): "bmc" (a counterexample, or none to
    # the depth) or "proof" (the unbounded proof: no counterexample at any depth or size).
    settled_by: str = "bmc"

    def verdict(self, inv: str) -> str:
        return "holds" if self.bmc.result(inv).holds else "violated"

    def matches(self, inv: str) -> bool:
        if inv not in {r.invariant for r in self.bmc.results}:
            return True
        expected = self.variant.expect.get(inv)
        return expected is None or expected == self.verdict(inv)

    @property
    def all_match(self) -> bool:
        ok = all(self.matches(r.invariant) for r in self.bmc.results)
        if self.proof is not None and not self.variant.buggy:
            ok = ok and self.proof.proved
        return ok

    @property
    def violated(self) -> bool:
        return not self.bmc.holds or (self.proof is not None and not self.proof.proved)


def protocol_for(
    variant: Variant,
    factory: ProtocolFactory | None = None,
    without: tuple[str, ...] = (),
    *,
    liveness: bool = False,
) -> Protocol:
    """The protocol a variant's switches configure: kvproof's handoff unless ``factory``,
    under the variant's assumptions less ``without``. A user protocol gets the guards of
    kvproof's assumptions on the actions it shares with kvproof's handoff, and the
    fairness of its fairness assumptions. ``liveness``: kvproof's handoff with a peer that
    may die unless the variant assumes ``prefill_eventually_reports`` (``protocol_of``)."""
    if factory is None:
        return protocol_of(variant, without=without, liveness=liveness)
    names = active(variant, without)
    protocol = factory(variant.switches)
    return apply(protocol, names, variant.switches, str(variant.path)) if names else protocol


def check_variant(
    variant: Variant,
    *,
    requests: int = 3,
    pages: int = 6,
    depth: int = 12,
    factory: ProtocolFactory | None = None,
    on_depth: Callable[[int], None] | None = None,
    invariants: list[str] | None = None,
    without: tuple[str, ...] = (),
    settled: Callable[[Protocol], Any] | None = None,
) -> VariantCheck:
    """``settled(protocol)``, when given, makes the BMC's ``settled`` (``bmc.py``)."""
    protocol = protocol_for(variant, factory, without)
    known = sorted({i.name for i in protocol.safety})
    for name in invariants or ():
        require_known(name, known, "invariant", "--invariant")
    # Settled-depth lemmas (model/search/bmc.py) cut a fixed variant's depth-15 BMC 4-13x and,
    # with a proof's inductive invariant (``settled``), a buggy one's deep queries too; they
    # change no verdict and no length, only which equally short trace Z3 picks (issue #30).
    hook = settled(protocol) if settled is not None else None
    try:
        result = bmc(
            protocol,
            {"Req": requests, "Page": pages},
            depth,
            variant=variant.name,
            on_depth=on_depth,
            invariants=invariants,
            settled=hook,
        )
    finally:
        close = getattr(hook, "close", None)
        if close is not None:
            close()  # a proof still running is not needed any more
    return VariantCheck(variant, protocol, result, without=tuple(without))


def assess_assumptions(
    check: VariantCheck,
    *,
    prove_it: bool,
    depth: int | None = None,
    progress: Callable[[str, str, str], None] | None = None,
) -> VariantCheck:
    """``check`` with the necessity of each assumption still in force (``necessity.py``),
    each looked for to ``depth`` (default: the check's BMC depth);
    ``progress(variant, "necessity", assumption)`` hears each one begin."""
    import dataclasses

    from kvproof.checker.verify.necessity import necessity

    variant = check.variant
    holding = [r.invariant for r in check.bmc.results if r.holds]
    found = []
    # a fairness assumption changes no safety verdict: liveness assesses it
    for name in of_kind(variant.assume, GUARD):
        if name in check.without:
            continue
        if progress is not None:
            progress(variant.name, "necessity", name)
        found.append(
            necessity(
                variant,
                name,
                lambda names: protocol_for(variant, None, names),
                dropped=check.without,
                holding=holding,
                sizes=check.bmc.sizes,
                depth=depth if depth is not None else check.bmc.depth,
                prove_it=prove_it,
            )
        )
    return dataclasses.replace(check, necessity=tuple(found))


def assumptions_json(variant: Variant, without: tuple[str, ...], found: tuple[Any, ...]) -> list:
    """The ``"assumptions"`` entries of ``--json``: declared text and source, why the
    variant relies on it, whether it was in force, and (when assessed) whether needed."""
    from kvproof.model.handoff.assumptions import declared

    by_name = {n.name: n for n in found}
    out = []
    for entry in declared(variant.assume):
        name = entry["name"]
        entry["why"] = variant.assume[name]
        entry["active"] = name not in without
        # fairness (issue #29): no safety verdict depends on it; check --liveness assesses it
        entry["kind"] = ASSUMPTIONS[name].kind if name in ASSUMPTIONS else GUARD
        if name in by_name:
            entry.update(by_name[name].to_json())
        out.append(entry)
    return out


def trace_rows(protocol: Protocol, trace: Trace) -> list[dict[str, Any]]:
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = replay(trace, concrete)
    rows = []
    for i, inst in enumerate(trace.steps):
        rows.append(
            {
                "step": i + 1,
                "action": inst.action,
                "args": args_dict(concrete, inst),
                "label": step_label(concrete, inst),
                "changes": changes(concrete, states[i], states[i + 1]),
            }
        )
        if trace.loop is not None and i >= trace.loop:
            rows[-1]["in_loop"] = True  # a lasso's loop (issue #29): these steps repeat
    return rows


def trace_explanation(protocol: Protocol, trace: Trace) -> str:
    if trace.loop is not None:  # a lasso: what its loop never resolves (issue #29)
        return lasso_explanation(trace, protocol)
    concrete = Concrete(Instance(protocol, trace.sizes))
    return explain(concrete, replay(trace, concrete), trace.violated or "")


def initial_facts(protocol: Protocol, trace: Trace) -> list[str]:
    """The free choices of the initial state that matter, e.g. 'r0: over prefill limit'."""
    facts = []
    over_p = trace.init.get("over_p", {})
    over_d = trace.init.get("over_d", {})
    used = {a for inst in trace.steps for a in inst.args[:1]}
    for r in sorted(used):
        bits = []
        if over_p.get((r,)):
            bits.append("prompt over prefill's limit")
        if over_d.get((r,)):
            bits.append("prompt over decode's limit")
        if trace.init.get("hit", {}).get((r,)):  # issue 12 item 3
            bits.append("decode's prefix cache holds the prompt's head")
        facts.append(f"r{r}: " + (", ".join(bits) if bits else "prompt within both limits"))
    return facts


def to_json(check: VariantCheck) -> dict[str, Any]:
    """The stable ``--json`` schema (documented in README)."""
    out: dict[str, Any] = {
        "kvproof_version": __version__,
        "variant": check.variant.name,
        "sizes": check.bmc.sizes,
        "depth": check.bmc.depth,
        "seconds": round(check.bmc.seconds, 4),
        "verdict": "violated" if check.violated else "holds",
        "settled_by": check.settled_by,
        "matches_expectation": check.all_match,
        "assumptions": assumptions_json(check.variant, check.without, check.necessity),
        "without": list(check.without),
        "invariants": [],
    }
    for r in check.bmc.results:
        info = INVARIANTS.get(r.invariant)
        entry: dict[str, Any] = {
            "name": r.invariant,
            "number": info.number if info else None,
            "statement": info.statement if info else _doc(check.protocol, r.invariant),
            "verdict": "holds" if r.holds else "violated",
            "expected": check.variant.expect.get(r.invariant),
            "matches": check.matches(r.invariant),
            "depth": r.depth,
            # "proof": holds at every depth and size, BMC having looked only to "depth"
            "settled_by": "proof"
            if r.holds and (check.settled_by == "proof" or r.invariant in check.bmc.proved)
            else "bmc",
            "seconds": round(r.seconds, 4),
        }
        if r.trace is not None:
            entry["shortest"] = r.shortest
            entry["primary"] = r.primary
            entry["explanation"] = trace_explanation(check.protocol, r.trace)
            entry["initial"] = initial_facts(check.protocol, r.trace)
            entry["trace"] = trace_rows(check.protocol, r.trace)
            if r.trace.loop is not None:
                entry["loop"] = r.trace.loop
        out["invariants"].append(entry)
    if check.proof is not None:
        out["proof"] = check.proof.to_json()
    return out


def _doc(protocol: Protocol, name: str) -> str:
    try:
        return protocol.invariant(name).doc
    except KeyError:
        return ""
