"""Proving several variants as work units (``prove --all --ray``).

One unit is one variant's proof (every obligation of its inductive invariant: initiation
and consecution per action and conjunct), which Z3 discharges in one ``Prover``. Units
return plain results (the counterexample to induction is plain data: it names its
protocol, switches and description); the driver merges them in variant order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kvproof.checker.distrib.executor import Executor, Unit, ordered
from kvproof.checker.verify.checking import ProtocolFactory, protocol_for
from kvproof.spec.variant import Variant


def prove_unit(variant: Variant, protocol: str | None, timeout_ms: int) -> Any:
    from kvproof.checker.verify.protocols import factory_of
    from kvproof.model.search.induction import prove

    return prove(protocol_for(variant, factory_of(protocol)), timeout_ms=timeout_ms)


def prove_variants(
    variants: Sequence[Variant],
    executor: Executor,
    *,
    protocol: str | None = None,
    factory: ProtocolFactory | None = None,
    timeout_ms: int = 60_000,
    on_done: Callable[[Variant, Any], None] | None = None,
) -> list[Any]:
    """Each variant's ``ProofResult``, in the order of ``variants``."""
    out: dict[int, Any] = {}
    units = [Unit(i, prove_unit, (v, protocol, timeout_ms)) for i, v in enumerate(variants)]
    for i, result in ordered(executor, units):
        out[i] = result
        if on_done is not None:
            on_done(variants[i], result)
    return [out[i] for i in range(len(variants))]
