"""``conform --vllm`` as a library call: vLLM's release code against the variant's model,
one ``ConformRun`` back (the SGLang form's run object: results, files, ``to_json()``,
``exit_code``). Bad input raises ``KvproofInputError`` before any walk starts.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kvproof.checker.conform.vllm import adapters, fetch
from kvproof.checker.conform.vllm.loader import Loaded
from kvproof.checker.conform.vllm.modules import load
from kvproof.checker.conform.vllm.pair import Pair
from kvproof.checker.conform.vllm.walk import REPLAY, walk
from kvproof.checker.upstream.run import ConformRun
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, initial_assignment
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant

SIZES = {"Req": 2, "Page": 2}


def default_release(variant: Variant) -> str:
    if variant.engine != "vllm":
        raise KvproofInputError(f"not a vLLM variant (engine {variant.engine!r})", variant.name)
    latest = variant.upstream.latest if variant.upstream else None
    if latest is None:
        why = "is exempt" if variant.upstream else "has no [upstream] table"
        raise KvproofInputError(
            f"no --vllm given and the variant {why}, so it names no release: pass "
            "--vllm VERSION|PATH",
            variant.name,
        )
    return latest


def conform_vllm(
    variant: Variant,
    vllm: str,
    *,
    traces: int = 200,
    seed: int = 0,
    faults: bool = False,
    out: Path | None = None,
    max_steps: int = 30,
) -> ConformRun:
    if variant.engine != "vllm":
        raise KvproofInputError(f"not a vLLM variant (engine {variant.engine!r})", variant.name)
    tree, label = fetch.resolve(vllm)
    adapter = adapters.select(tree)
    mode = variant.switches.transfer_mode
    table = variant.upstream
    policy = table.kv_transfer_config.get("kv_load_failure_policy") if table else None
    start = time.perf_counter()
    logging.disable(logging.ERROR)  # the release logs each expected expiry, once per walk
    try:
        with Loaded(tree) as loaded:
            mods = load(loaded)
            concrete = Concrete(Instance(protocol_of(variant), SIZES))
            inits = [s for s in concrete.initial_states() if _plain(concrete, s)]
            rng = random.Random(seed)
            steps, decisions = 0, Counter[str]()
            for n in range(1, traces + 1):
                pair = Pair(mods, mode, str(policy) if policy else None)
                res = walk(concrete, inits, pair, variant, rng, faults=faults, max_steps=max_steps)
                steps += len(res.steps)
                decisions.update(_kinds(pair.decisions))
                if res.switch is not None:
                    detail = tuple(m.line() for m in res.mismatches)
                    if res.replayed is not None:
                        detail += (
                            f"lasso replayed on the real scheduler: {res.replayed} request(s) "
                            f"still hold their blocks after {REPLAY} more engine steps",
                        )
                    files = _write(concrete, variant, res, seed, out, label) if out else ()
                    return ConformRun(
                        variant.name, label, adapter.name, _env(variant, policy, mode),
                        _source(variant), n, steps, time.perf_counter() - start,
                        res.switch, detail, files, dict(decisions), adapter.exercised,
                    )  # fmt: skip
    finally:
        logging.disable(logging.NOTSET)
    return ConformRun(
        variant.name, label, adapter.name, _env(variant, policy, mode), _source(variant),
        traces, steps, time.perf_counter() - start, decisions=dict(decisions),
        exercised=adapter.exercised,
    )  # fmt: skip


def _plain(concrete: Concrete, s: Any) -> bool:
    """Prompts within both sides' limits, no decode prefix-cache hit: what conform drives."""
    reqs = range(concrete.inst.sizes["Req"])
    names = {v.name for v in concrete.protocol.vars}
    flags = [n for n in ("over_p", "over_d", "hit") if n in names]
    return not any(concrete.value(s, f, (r,)) for f in flags for r in reqs)


def _kinds(decisions: Counter[str]) -> Counter[str]:
    """Per-request decisions summed by kind (``prefill finished_sending r0`` -> one kind)."""
    return Counter({k.rsplit(" r", 1)[0]: v for k, v in decisions.items()})


def _env(variant: Variant, policy: Any, mode: str) -> dict[str, Any]:
    table = variant.upstream
    extra = dict(table.kv_connector_extra_config) if table else {}
    return {"transfer_mode": mode, "kv_load_failure_policy": policy or "fail", **extra}


def _source(variant: Variant) -> dict[str, str]:
    table = variant.upstream
    given = set(table.kv_connector_extra_config) | set(table.kv_transfer_config) if table else set()
    keys = {"transfer_mode", "kv_load_failure_policy", *given}
    return {k: ("variant" if k in given else "release default") for k in sorted(keys)}


def _write(
    concrete: Concrete, variant: Variant, res: Any, seed: int, out: Path, label: str
) -> tuple[str, ...]:
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    meta = {
        "finding": "divergence",
        "source": f"conform against vllm {label}",
        "switch": res.switch,
        "detail": "; ".join(m.line() for m in res.mismatches),
        "seed": seed,
        "stalls_after_step": list(res.stalls),
        "replayed_still_held": res.replayed,
    }
    trace = Trace(
        variant.name, dict(SIZES), initial_assignment(concrete, res.init), tuple(res.steps),
        None, meta,
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{variant.name}-vs-vllm-{Path(label).name}"
    jsonl, itf = out / f"{stem}.jsonl", out / f"{stem}.itf.json"
    write_jsonl(trace, jsonl, protocol=concrete.protocol)
    write_itf(trace, itf, concrete.protocol)
    return (str(jsonl), str(itf))
