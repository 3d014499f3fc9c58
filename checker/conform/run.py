"""The walks of one conform run, whatever the engine: ``conform_engine(engine, variant)``
returns a ``ConformRun``.

The walks come from the model at the engine's sizes (``coverage.Guide``: each step prefers
an abstract transition no walk has taken yet, then one toward the nearest untaken one);
the first divergent walk stops the run, is diagnosed (``diagnose.py``: which single switch
flip makes it conform) and is written as a trace.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kvproof.checker.conform import model_side
from kvproof.checker.conform.coverage import Guide
from kvproof.checker.conform.diagnose import diagnose
from kvproof.checker.conform.engine import Engine, UpstreamRaised
from kvproof.checker.conform.reach_cache import reachable_cached
from kvproof.checker.conform.result import ConformRun
from kvproof.checker.conform.trace_out import write_divergence
from kvproof.checker.conform.walk import WalkResult, walk
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.events import BY_NAME, FAULT
from kvproof.spec.variant import Variant

Progress = Callable[[int, int], None]  # (walks done, walks asked)


@dataclass(frozen=True)
class Options:
    traces: int = 200
    seed: int = 0
    # Environment faults (transfer failures, prefill aborts, timers) are on by default:
    # a client's abort alone leaves most of the decision code unrun (issue 39).
    faults: bool = True
    out: Path | None = None
    max_steps: int = 30


def latest_release(variant: Variant, flag: str) -> str:
    """The newest release the variant's ``[upstream]`` table says it conforms to: what
    ``conform`` runs when no ``flag`` (``--sglang``, ``--vllm``) names one."""
    latest = variant.upstream.latest if variant.upstream else None
    if latest is None:
        why = "is exempt" if variant.upstream else "has no [upstream] table"
        raise KvproofInputError(
            f"no {flag} given and the variant {why}, so it names no release: pass "
            f"{flag} VERSION|PATH",
            variant.name,
        )
    return latest


def allowed_actions(faults: bool) -> Callable[[str], bool]:
    """The walk's events: every event, or without ``--faults`` the engine's events and
    the client's abort (the decision code under test is the abort path)."""
    if faults:
        return lambda action: True
    return lambda action: action == "abort" or (action in BY_NAME and BY_NAME[action].kind != FAULT)


def conform_engine(
    engine: Engine, variant: Variant, opts: Options, progress: Progress | None = None
) -> ConformRun:
    start = time.perf_counter()
    concrete = Concrete(Instance(protocol_of(variant), dict(engine.sizes)))
    allowed = allowed_actions(opts.faults)
    reach = reachable_cached(variant, concrete, allowed, opts.faults)
    guide = Guide(concrete, reach, opts.seed)
    steps, trivial = 0, 0
    decisions: Counter[str] = Counter()
    events: Counter[str] = Counter()  # model steps taken, by action
    res: WalkResult | None = None
    n = 0
    init = guide.initial()
    try:
        decisions.update(engine.run_decisions())
        for n in range(1, opts.traces + 1):
            init = guide.initial() if n > 1 else init
            h = engine.harness(model_side.requests_of(concrete, init))
            res = walk(concrete, init, h, guide, allowed=allowed, max_steps=opts.max_steps)
            guide.learn(res.covered)
            steps += len(res.steps)
            events.update(s.action for s in res.steps)
            trivial += res.trivial
            decisions.update(h.decisions())
            if progress is not None:
                progress(n, opts.traces)
            if res.diverged:
                break
    except UpstreamRaised as exc:  # outside a walk step: setup, prefill's intake
        res = WalkResult(init=init, raised=exc)
    base = dict(
        variant=variant.name,
        engine=engine.name,
        release=engine.release,
        adapter=engine.adapter,
        env=dict(engine.settings),
        env_source=dict(engine.settings_source),
        walks=n,
        steps=steps,
        faults=opts.faults,
        sizes=dict(engine.sizes),
        decisions=dict(decisions),
        exercised=engine.exercised(),
        coverage=guide.coverage(),
        trivial=trivial,
        events=dict(sorted(events.items())),
        pages=_pages(engine),
    )
    if res is None or not res.diverged:
        return ConformRun(**base, seconds=time.perf_counter() - start)  # type: ignore[arg-type]
    found = diagnose(engine, variant, concrete, res)
    raised = str(res.raised) if res.raised is not None else None
    files: tuple[str, ...] = ()
    if opts.out is not None:
        files = write_divergence(concrete, variant, engine, res, found, opts.seed, opts.out)
    return ConformRun(
        **base,  # type: ignore[arg-type]
        seconds=time.perf_counter() - start,
        switch=found.explained_by[0][0]
        if found.explained_by
        else (found.assumptions[0] if found.assumptions else None),
        diagnosis=found,
        detail=tuple(m.line() for m in res.mismatches),
        raised=raised,
        files=files,
    )


def _pages(engine: Engine) -> dict[str, object]:
    """An engine's page counts per prompt kind, where its adapter reports them (optional:
    ``pages``, values with ``to_json()``); asked after the walks, so a raise was seen."""
    try:
        return dict(getattr(engine, "pages", None) or {})
    except UpstreamRaised:
        return {}
