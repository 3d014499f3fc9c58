"""The one driver of ``check``: a variant's plan (``plan.py``), run phase by phase.

A ``CheckJob`` is plain data (the variant, the options, its phases); the protocols it checks
are built once, where the job is prepared (``prepare``), and handed to ``run_job`` with it:
a forked worker inherits them, a Ray worker builds its own from the job (``built``). Each
phase reads the verdict so far and returns it with its answer (``verdict.py``); a phase
skips itself only on what an earlier phase answered (a proof that settled the verdict, a
BMC that found a counterexample, a proof that went through). While a job runs, each
phase's start reaches ``progress(variant, stage, detail)``.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvproof.checker.distrib.executor import ProgressFn
from kvproof.checker.distrib.fork import Child, fork_call
from kvproof.checker.verify.plan import SUBSET_LEAD, CheckOptions, Phase, plan, split_names
from kvproof.checker.verify.protocols import ProtocolFactory, factory_of, protocol_for
from kvproof.checker.verify.verdict import CompleteRun, Necessity, VariantVerdict
from kvproof.model.lang.dsl import Protocol
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import require_known
from kvproof.spec.variant import Variant

if TYPE_CHECKING:  # bmc loads Z3: the plan is made before any search is imported
    from kvproof.model.search.bmc import Settlement


@dataclass(frozen=True)
class CheckJob:
    variant: Variant
    options: CheckOptions
    phases: tuple[Phase, ...]

    @property
    def depth(self) -> int:
        """The variant's full BMC depth (the one necessity looks to)."""
        return max((p.depth or 0 for p in self.phases), default=0)


@dataclass(frozen=True)
class Protocols:
    """What a job checks, built once per job: the safety protocol and, when the plan has a
    liveness phase, the liveness one (a peer that may die: ``protocol_of``)."""

    safety: Protocol
    liveness: Protocol | None = None


def prepare(
    variant: Variant,
    options: CheckOptions,
    factory: ProtocolFactory | None = None,
    *,
    every: bool = False,
) -> tuple[CheckJob, Protocols]:
    """The job and its protocols; names the protocol does not know are bad input now,
    before any search starts."""
    safety = protocol_for(variant, factory, options.without)
    phases = plan(variant, options, strengthened=bool(safety.strengthening), every=every)
    job = CheckJob(variant, options, phases)
    if phases[0].name == "bmc":
        known = sorted({i.name for i in safety.safety})
        for name in split_names(options.invariants)[0]:
            require_known(name, known, "invariant", "--invariant")
    return job, Protocols(safety, _lively(job, factory))


def built(job: CheckJob) -> Protocols:
    """The job's protocols, built in this process (a Ray worker: the user's protocol loaded
    from its 'module:attr')."""
    factory = factory_of(job.options.protocol)
    return Protocols(protocol_for(job.variant, factory, job.options.without), _lively(job, factory))


def _lively(job: CheckJob, factory: ProtocolFactory | None) -> Protocol | None:
    phase = next((p for p in job.phases if p.name == "liveness"), None)
    if phase is None:
        return None
    protocol = protocol_for(job.variant, factory, job.options.without, liveness=True)
    if not protocol.liveness:
        raise KvproofInputError(
            f"protocol {protocol.name!r} declares no liveness properties", "--liveness"
        )
    for name in phase.names or ():
        require_known(name, [p.name for p in protocol.liveness], "liveness property", "--invariant")
    return protocol


def run_job(
    job: CheckJob, protocols: Protocols, progress: ProgressFn | None = None
) -> VariantVerdict:
    """The job's phases in order; ``progress`` hears each begin ("start", "bmc" with the
    depth, "proof", "necessity" with the assumption, "complete", "liveness")."""
    run = _Phases(job, protocols, progress or _silent)
    run.say(job.variant.name, "start", "")
    verdict = VariantVerdict(job.variant, protocols.safety, without=job.options.without)
    for phase in job.phases:
        verdict = getattr(run, phase.name)(phase, verdict)
    return verdict


@dataclass(frozen=True)
class _Phases:
    """Each phase of a running job, by its ``Phase.name``: it reads the verdict so far and
    returns it with its answer."""

    job: CheckJob
    protocols: Protocols
    say: ProgressFn

    def bmc(self, phase: Phase, verdict: VariantVerdict) -> VariantVerdict:
        if verdict.settled_by == "proof":
            return verdict  # the proof answered for every depth: no deeper search
        from kvproof.model.search.bmc import bmc

        assert phase.depth is not None
        name = self.job.variant.name
        safety, _ = split_names(self.job.options.invariants)
        # Settled-depth lemmas (model/search/bmc.py) cut a fixed variant's depth-15 BMC 4-13x and,
        # with a proof's inductive invariant (the background subset), a buggy one's deep queries
        # too; they change no verdict and no length, only which equally short trace Z3 picks.
        hook = None
        if phase.background:
            hook = BackgroundSubset(self.protocols.safety, phase.depth - SUBSET_LEAD)
        try:
            result = bmc(
                self.protocols.safety,
                self.job.options.sizes,
                phase.depth,
                variant=name,
                on_depth=lambda k: self.say(name, "bmc", str(k)),
                invariants=safety or None,
                settled=hook,
            )
        finally:
            if hook is not None:
                hook.close()  # a proof still running is not needed any more
        return dataclasses.replace(verdict, invariants=result)

    def proof(self, phase: Phase, verdict: VariantVerdict) -> VariantVerdict:
        if verdict.proof is not None or (phase.settles and not verdict.bmc.holds):
            return verdict  # proved already, or a shallow counterexample: the deep BMC decides
        from kvproof.model.search.induction import prove

        self.say(self.job.variant.name, "proof", "")
        proof = prove(self.protocols.safety)
        settled = "proof" if phase.settles and proof.proved else verdict.settled_by
        return dataclasses.replace(verdict, proof=proof, settled_by=settled)

    def necessity(self, phase: Phase, verdict: VariantVerdict) -> VariantVerdict:
        """Each guard assumption in force dropped once, to the full depth even when the proof
        settled the verdict at a shallow one (a fairness assumption changes no safety
        verdict: the liveness phase assesses it)."""
        from kvproof.spec.assumptions import GUARD, of_kind

        assert phase.depth is not None
        variant, without = self.job.variant, self.job.options.without
        holding = [r.invariant for r in verdict.bmc.results if r.holds]
        found = []
        for name in of_kind(variant.assume, GUARD):
            if name not in without:
                self.say(variant.name, "necessity", name)
                found.append(_needed(variant, name, without, holding, verdict, phase.depth))
        return dataclasses.replace(verdict, necessity=tuple(found))

    def complete(self, phase: Phase, verdict: VariantVerdict) -> VariantVerdict:
        proof = verdict.proof
        unknown = verdict.bmc.holds and proof is not None and not proof.proved
        if phase.reason == "fallback" and not unknown:
            return verdict  # BMC or the proof decided: nothing for the search to settle
        from kvproof.model.search.complete import check_complete

        assert phase.reason is not None and phase.budget is not None
        self.say(self.job.variant.name, "complete", "")
        name, sizes, budget = self.job.variant.name, self.job.options.sizes, phase.budget
        done = check_complete(
            self.protocols.safety, sizes, budget_s=budget, variant=name, proved=proof
        )
        command = None  # an unknown names what would decide it: the search with 4x the budget
        if done.verdict == "unknown":
            words = ["kvproof", "check", name]
            words += ["--protocol", self.job.options.protocol] if self.job.options.protocol else []
            words += ["--complete", "--requests", str(sizes["Req"]), "--pages", str(sizes["Page"])]
            command = " ".join(shlex.quote(w) for w in [*words, "--budget", f"{budget * 4:g}"])
        return dataclasses.replace(verdict, complete=CompleteRun(phase.reason, done, command))

    def liveness(self, phase: Phase, verdict: VariantVerdict) -> VariantVerdict:
        from kvproof.checker.verify.liveness import check_liveness

        assert self.protocols.liveness is not None
        self.say(self.job.variant.name, "liveness", "")
        found = check_liveness(
            self.job.variant,
            self.protocols.liveness,
            names=phase.names,
            without=self.job.options.without,
            factory=factory_of(self.job.options.protocol) if phase.necessity else None,
            necessity=phase.necessity,
        )
        return dataclasses.replace(verdict, liveness=found)


def _needed(
    variant: Variant,
    name: str,
    without: tuple[str, ...],
    holding: list[str],
    verdict: VariantVerdict,
    depth: int,
) -> Necessity:
    """Is assumption ``name`` needed (dropped beside ``without``)? ``holding``: the
    invariants that held with every assumption in place. *Needed* when dropping it breaks
    one of them (BMC finds the counterexample, at the check's sizes and depth);
    *unnecessary* when dropping it changes nothing: every one still holds to the depth,
    and (for a fixed variant) the unbounded proof still goes through; *undetermined* when
    the proof fails without it but BMC finds no counterexample."""
    from kvproof.model.search.bmc import bmc

    protocol = protocol_for(variant, None, (*without, name))
    proved_without = None
    if verdict.proof is not None and protocol.strengthening:
        from kvproof.model.search.induction import prove

        proved_without = prove(protocol).proved
        if proved_without:
            return Necessity(name, False, "unnecessary: the proof goes through without it")
    if holding:
        result = bmc(
            protocol,
            verdict.bmc.sizes,
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


def _silent(variant: str, stage: str, detail: str = "") -> None:
    pass


class BackgroundSubset:
    """``bmc``'s ``settled``: the invariants ``inductive_subset`` proves and its inductive
    invariant, computed in a forked child while the BMC goes on in this process (the other
    core), and waited for at depth ``wait`` (or the last, if that comes first); its
    answer ends the search once every invariant not proved has its counterexample. The
    child is a copy: its Z3 work leaves this process's context as it was (``fork.py``).

    Whether the child starts depends only on the unresolved names, and the answer is taken
    at a fixed depth, so the stop depth, the counterexamples and the ``--json`` are the same
    however fast the proof comes back. Without ``fork`` nothing starts: the full depth."""

    def __init__(self, protocol: Protocol, wait: int) -> None:
        self.protocol = protocol
        self.wait = wait
        self.child: Child | None = None
        self.answer: Settlement | None = None

    def __call__(self, k: int, unresolved: frozenset[str], last: bool) -> Settlement | None:
        if self.answer is not None or not unresolved:
            return self.answer
        if self.child is None:
            if not hasattr(os, "fork"):
                return None
            self.child = fork_call(_proved, self.protocol, tuple(sorted(unresolved)))
        if k < self.wait and not last:
            return None  # still early: the BMC goes one depth further meanwhile
        from kvproof.model.search.bmc import Settlement

        try:
            self.answer = self.child.result()
        except Exception:  # a failed (or dead) proof settles nothing
            self.answer = Settlement(frozenset())
        return self.answer

    def close(self) -> None:
        """Stop a proof nobody will read (the BMC found every counterexample first)."""
        if self.child is not None:
            self.child.kill()


def _proved(protocol: Protocol, names: tuple[str, ...]) -> Settlement:
    """``inductive_subset``, imported in the child: the prover and numpy stay out of the BMC's
    process."""
    from kvproof.model.search.houdini import inductive_subset

    return inductive_subset(protocol, names)
