"""Search the model first, start the engine only to confirm: a finding in well under 2 s.

``kvproof fuzz`` used to start with the engine (importing torch alone takes seconds) and
walk model and engine in lockstep. Most findings are already in the model: a model-only
random walk (the compiled concrete interpreter, no torch, no Z3) finds the incident's
counterexample in a fraction of a second. It is reported at once as a *model-side*
finding; then the engine replays it (``replay_trace``), and its verdict follows, timed too.
The engine campaign (``fuzz.fuzz``) still runs when the model finds nothing, which is
where engine-only bugs (a crash, a divergence) show up.

This module imports neither torch nor the engine (``checker/runs/fuzz_run.py`` confirms a
finding with ``replay_trace`` once it is reported).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import Trace, initial_assignment
from kvproof.spec.variant import Variant

if TYPE_CHECKING:
    from kvproof.checker.conformance.verdict import ReplayReport


def left_out(protocol: Protocol, faults: bool) -> frozenset[str]:
    """The actions a model walk never takes: the environment's faults (the protocol's, as
    the engine walks take them; give_up included) unless ``faults``."""
    return frozenset() if faults else protocol.faults


@dataclass(frozen=True)
class ModelFinding:
    trace: Trace  # shortened: no step can be dropped without losing the violation
    invariant: str
    walks: int
    seconds: float


def model_search(
    variant: Variant,
    sizes: dict[str, int],
    *,
    faults: bool = False,
    seed: int = 0,
    max_walks: int = 5000,
    max_seconds: float = 1.0,
    max_steps: int = 40,
) -> ModelFinding | None:
    """Random walks of the model alone; the first one reaching a violated invariant."""
    start = time.perf_counter()
    protocol = protocol_of(variant)
    concrete = Concrete(Instance(protocol, sizes))
    skip = left_out(protocol, faults)
    inits = list(concrete.initial_states())
    rng = random.Random(seed)
    for n in range(1, max_walks + 1):
        if time.perf_counter() - start > max_seconds:
            break
        state = init = rng.choice(inits)
        steps: list[ActionInstance] = []
        for k in range(max_steps + 1):
            bad = concrete.violated(state)
            if bad:
                trace = _shorten(concrete, variant, init, steps, bad[0])
                return ModelFinding(trace, bad[0], n, time.perf_counter() - start)
            succ = [
                (inst, data)
                for inst, data in (concrete.successor_data(state.data) if k < max_steps else ())
                if inst.action not in skip
            ]
            if not succ:
                break
            inst, data = rng.choice(succ)
            steps.append(inst)
            state = State(data)
    return None


Steps = tuple[ActionInstance, ...]


def shrink_steps(
    steps: Steps, requests: Iterable[int], keeps: Callable[[Steps], Steps | None]
) -> Steps:
    """Drop a whole request's steps at a time, then one step at a time, while ``keeps``
    accepts the shorter run (it returns the steps the run kept, or None): delta debugging
    one element at a time, as walks are short. The model's walks and the engine's
    (``walk.trim``) are shortened alike."""
    best = steps
    for r in requests:
        got = keeps(tuple(s for s in best if s.args[0] != r))
        best = best if got is None else got
    i = 0
    while i < len(best):
        got = keeps(best[:i] + best[i + 1 :])
        if got is None:
            i += 1
        else:
            best = got
    return best


def _shorten(
    concrete: Concrete, variant: Variant, init: State, steps: list[ActionInstance], inv: str
) -> Trace:
    """The walk without every step the violation does not need (each check is a few
    compiled steps), cut after its first violating state."""

    def keeps(cand: Steps) -> Steps | None:
        state: State | None = init
        for inst in cand:
            if (state := concrete.step(state, inst)) is None:  # type: ignore[arg-type]
                return None
        return cand if inv in concrete.violated(state) else None  # type: ignore[arg-type]

    best = list(shrink_steps(tuple(steps), sorted({s.args[0] for s in steps}), keeps))
    # Cut the tail after the first state that violates ``inv``.
    state = init
    for k, inst in enumerate(best, start=1):
        state = concrete.step(state, inst)  # type: ignore[assignment]
        if inv in concrete.violated(state):
            best = best[:k]
            break
    init_values = initial_assignment(concrete, init)
    meta = {"finding": "violation", "detail": f"model violates {inv}", "source": "model walk"}
    return Trace(variant.name, dict(concrete.inst.sizes), init_values, tuple(best), inv, meta)


def confirmed_kind(report: ReplayReport) -> str:
    """The fuzz finding's kind once the engine replayed the model's counterexample, in the
    engine campaign's words (``walk.py``): what the clients saw, or how the engine
    disagreed (a crash; a divergence, also when it breaks no invariant the model breaks)."""
    if report.crash is not None:
        return "crash"
    if report.divergence is not None or not report.failed:
        return "divergence"
    return {"leak": "leak", "wrong_answer": "wrong_answer"}.get(report.shows, "violation")
