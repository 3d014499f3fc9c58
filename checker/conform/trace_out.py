"""A divergent walk written as a trace (JSON Lines and ITF, readable by ``kvproof replay``
and ``kvproof report --html``), whose header names the diagnosis."""

from __future__ import annotations

from pathlib import Path

from kvproof.checker.conform.engine import Engine
from kvproof.checker.conform.result import Diagnosis
from kvproof.checker.conform.walk import WalkResult
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.trace import Trace, initial_assignment
from kvproof.spec.variant import Variant


def write_divergence(
    concrete: Concrete,
    variant: Variant,
    engine: Engine,
    res: WalkResult,
    found: Diagnosis,
    seed: int,
    out: Path,
) -> tuple[str, ...]:
    from kvproof.checker.traces.carried_variant import carried
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    meta = {
        "finding": "upstream_exception" if res.raised is not None else "divergence",
        "source": f"conform against {engine.name} {engine.release}",
        "switch": found.explained_by[0][0] if found.explained_by else None,
        "explained_by": [{"switch": s, "value": v} for s, v in found.explained_by],
        "diagnosis": found.headline,
        "detail": "; ".join(m.line() for m in res.mismatches),
        "raised": str(res.raised) if res.raised is not None else None,
        "seed": seed,
        # Time stalled past the code's release deadline after these steps (no model step).
        "stalls_after_step": list(res.stalls),
        # Time passed with the code's heartbeats delivered after these steps (no fault).
        "beats_after_step": list(res.beats),
        # A variant outside the catalog travels with its trace, so report --html draws it.
        **carried(variant),
    }
    trace = Trace(
        variant.name,
        dict(concrete.inst.sizes),
        initial_assignment(concrete, res.init),
        tuple(res.steps),
        None,
        meta,
    )
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{variant.name}-vs-{engine.name}-{Path(engine.release).name}"
    jsonl, itf = out / f"{stem}.jsonl", out / f"{stem}.itf.json"
    out.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    if res.raised is None or res.steps:  # a walk up to a raise is a model walk too
        write_jsonl(trace, jsonl, protocol=concrete.protocol)
        write_itf(trace, itf, concrete.protocol)
        files += [str(jsonl), str(itf)]
    if res.raised is not None:
        text = out / f"{stem}.traceback.txt"
        text.write_text(f"{res.raised}\n\n{res.raised.traceback}", encoding="utf-8")
        files.append(str(text))
    return tuple(files)
