"""``kvproof prove`` as one library call: ``prove_variants(...)`` returns a ``ProveRun``.

Per variant, one of two things: an inductive proof with the protocol's strengthening (or a
saved one, ``--strengthening``), or, when the protocol brings none or ``--infer`` asks,
inference of the strengthening first (``model/search/infer.py``). A proof also says which
of the variant's assumptions it needs (the proof fails without it). ``--ray`` proves every
variant as one Ray task each (``checker/verify/check_pool.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvproof.checker.runs.progress import QUIET, Progress, Reporter
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class ProveOptions:
    """What ``kvproof prove`` takes besides the variants (its flags, by the same names)."""

    timeout: int = 60  # seconds per solver query
    without: tuple[str, ...] = ()
    protocol: str | None = None  # a user protocol's 'module:attr'
    infer: bool = False
    save: Path | None = None  # with infer: write the inferred invariant here
    strengthening: Path | None = None  # prove with a saved strengthening
    budget: float = 120.0  # seconds for inference
    infer_literals: int | None = None
    infer_vars: int | None = None
    html: Path | None = None  # the proofs (or CTIs) as one HTML report
    ray: str | None = None


@dataclass(frozen=True)
class VariantProof:
    """One variant's ``--json`` object, with the proof or the inference it came from."""

    name: str
    data: dict[str, Any]
    proof: Any = None  # kvproof.model.search.induction.ProofResult
    inference: Any = None  # kvproof.model.search.infer's result (prove --infer)

    @property
    def proved(self) -> bool:
        return bool(self.data["proved"])


@dataclass(frozen=True)
class ProveRun:
    proofs: tuple[VariantProof, ...]
    html: Path | None = None  # written
    saved: Path | None = None  # the inferred invariant, written

    @property
    def exit_code(self) -> int:
        return 0 if all(p.proved for p in self.proofs) else 1

    def to_json(self) -> Any:
        docs = [p.data for p in self.proofs]
        return docs if len(docs) > 1 else docs[0]


def prove_variants(
    names: Sequence[str] = (),
    *,
    every: bool = False,
    variants_dir: Path | None = None,
    options: ProveOptions = ProveOptions(),
    progress: Progress = QUIET,
) -> ProveRun:
    """Prove the variants ``names`` (or ``every`` fixed one in ``variants_dir``)."""
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff.assumptions import active
    from kvproof.model.search.candidates import Templates

    if (options.infer_literals or options.infer_vars) and options.strengthening:
        raise KvproofInputError(
            "--infer-literals/--infer-vars tune inference: drop them with --strengthening",
            "--strengthening",
        )
    templates = Templates.sized(options.infer_literals, options.infer_vars)
    user = load_protocol(options.protocol) if options.protocol else None
    variants = resolve_variants(names, every, variants_dir, user)
    if every:
        variants = [v for v in variants if not v.buggy]
        if not variants:
            raise KvproofInputError("no fixed variant to prove", str(variants_dir or "--all"))
    for variant in variants:
        active(variant, options.without)  # each dropped one must be listed by the variant
    factory = user.factory if user else None
    if options.ray is not None and options.without:
        raise KvproofInputError("--without runs locally: drop --ray", "--without")
    if options.save and len(variants) != 1:
        raise KvproofInputError("--save needs exactly one VARIANT", "--save")
    with progress.open("proving", len(variants)) as report:
        on_ray = _on_ray(variants, options, report) if options.ray is not None else None
        done = [
            _prove_one(v, on_ray[i] if on_ray else None, factory, templates, options, report)
            for i, v in enumerate(variants)
        ]
    if options.html:
        from kvproof.checker.render.prove_html import proof_page
        from kvproof.spec.files import write_text_atomic

        write_text_atomic(Path(options.html), proof_page([page for _, page in done if page]))
    proofs = tuple(p for p, _ in done)
    inferred = any(p.inference is not None and p.proved for p in proofs)
    return ProveRun(proofs, html=options.html, saved=options.save if inferred else None)


def _prove_one(
    variant: Any,
    ray_result: Any,
    factory: Any,
    templates: Any,
    options: ProveOptions,
    report: Reporter,
) -> tuple[VariantProof, tuple | None]:
    """One variant's proof (or the one Ray gave, ``ray_result``) and its assumptions'
    necessity, with its page for ``--html`` (none for an inference, saved with ``--save``)."""
    from kvproof.checker.verify.protocols import protocol_for

    protocol = protocol_for(variant, factory, options.without)
    if options.strengthening:
        from kvproof.model.search.infer import load

        protocol = replace(protocol, strengthening=load(options.strengthening, protocol))
        ray_result = None
    elif ray_result is None and (options.infer or not protocol.strengthening):
        done = _infer(variant.name, protocol, templates, options, report)
        if options.save and done.proved:
            from kvproof.model.search.infer import save

            save(options.save, protocol, done.inference.inferred)
        return done, None
    result = ray_result
    if result is None:
        from kvproof.model.search.induction import prove

        report.stage(variant.name, "proof")
        result = prove(protocol, timeout_ms=options.timeout * 1000)
    proof = _proof(variant, result, factory is None, options, report)
    report.done(variant.name, "proved" if result.proved else "NOT proved")
    return proof, (variant, protocol, result)


def _proof(
    variant: Any, result: Any, own: bool, options: ProveOptions, report: Reporter
) -> VariantProof:
    """The proof's ``--json`` object; for kvproof's own protocol (``own``), an assumption
    is needed when the proof fails without it (the proof alone cannot show a counterexample
    exists: ``kvproof check --without`` does)."""
    from kvproof.checker.render.check_json import assumptions_json
    from kvproof.checker.verify.verdict import Necessity
    from kvproof.model.handoff import protocol_of
    from kvproof.model.search.induction import prove

    without = options.without
    found = []
    for name in variant.assume if own and result.proved else ():
        if name in without:
            continue
        report.stage(variant.name, "necessity", name)
        again = prove(
            protocol_of(variant, without=(*without, name)), timeout_ms=options.timeout * 1000
        )
        if again.proved:
            found.append(Necessity(name, False, "unnecessary: the proof goes through without it"))
        else:
            found.append(Necessity(name, True, f"needed by the proof: without it {again.summary}"))
    data = {
        "variant": variant.name,
        **result.to_json(),
        "assumptions": assumptions_json(variant, without, found),
        "without": list(without),
    }
    return VariantProof(variant.name, data, proof=result)


def _on_ray(variants: list, options: ProveOptions, report: Reporter) -> list:
    """Every variant's proof as one Ray task; results in variant order. A proof is one
    solver call with no stages inside, so progress hears of each as its result arrives."""
    from kvproof.checker.distrib.executor import executor_for
    from kvproof.checker.verify.check_pool import prove_variants as on_pool

    for v in variants:
        report.stage(v.name, "ray", "proving")

    def arrived(v: Any, result: Any) -> None:
        report.stage(v.name, "ray", "proved" if result.proved else "NOT proved")

    with executor_for(options.ray, min(os.cpu_count() or 1, len(variants) or 1)) as ray:
        return on_pool(
            variants,
            ray,
            protocol=options.protocol,
            timeout_ms=options.timeout * 1000,
            on_done=arrived,
        )


def _infer(
    name: str, protocol: Any, templates: Any, options: ProveOptions, report: Reporter
) -> VariantProof:
    """``prove --infer``: infer the strengthening (``model/search/infer.py``), then prove."""
    from kvproof.model.search.infer import infer

    report.stage(name, "inference")
    result = infer(
        protocol, templates=templates, budget_s=options.budget, timeout_ms=options.timeout * 1000
    )
    report.done(name, result.summary)
    proof = result.proof
    data = {"variant": name, **(proof.to_json() if proof else {"proved": False})}
    data["proved"] = result.proved
    data["summary"] = result.summary
    data["inferred"] = [{"text": c.text, **c.to_json()} for c in result.inferred]
    data["inference"] = result.to_json()
    return VariantProof(name, data, proof=proof, inference=result)
