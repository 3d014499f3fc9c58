"""``kvproof explore --json``: the search's counts, per invariant its verdict and shortest
counterexample, and a deadlock, each trace as rows of steps (action, args, changed cells)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.report.trace_view import initial_choices


def _describe(concrete: Any, var: str, args: tuple[int, ...]) -> str:
    return str(concrete.inst.describe(var, args))


def steps(trace: Any, protocol: Any) -> list[dict[str, Any]]:
    """One row per step: the action, its arguments, the cells it changed."""
    from kvproof.model.lang.concrete import Concrete
    from kvproof.model.lang.instance import Instance, element_name
    from kvproof.model.lang.trace import replay

    concrete = Concrete(Instance(protocol, trace.sizes))
    states = replay(trace, concrete)
    rows = []
    for k, step in enumerate(trace.steps):
        params = protocol.action(step.action).params
        rows.append(
            {
                "step": k + 1,
                "action": step.action,
                "args": [element_name(s, a) for s, a in zip(params, step.args, strict=True)],
                "changes": [
                    f"{_describe(concrete, var, a)}: {old} -> {new}"
                    for var, a, old, new in concrete.diff(states[k], states[k + 1])
                ],
                "violated": concrete.violated(states[k + 1]),
            }
        )
    return rows


def as_json(result: Any, protocol: Any) -> dict[str, Any]:
    def trace(t: Any) -> dict[str, Any] | None:
        if t is None:
            return None
        return {
            "length": len(t),
            "initial": initial_choices(protocol, t),
            "steps": steps(t, protocol),
        }

    return {
        "variant": result.variant,
        "sizes": result.sizes,
        "states": result.states,
        "transitions": result.transitions,
        "initial_states": result.initial,
        "diameter": result.diameter,
        "terminal": result.terminal,
        "deadlocks": result.deadlocks,
        "truncated": result.truncated,
        "symmetry": list(result.symmetry),
        "stop_at_violation": result.stop_at_violation,
        "seconds": round(result.seconds, 3),
        "invariants": {
            name: {
                "verdict": "holds" if result.holds(name) else "violated",
                "shortest": result.shortest(name),
                "violating_states": result.violating[name],
                "counterexample": trace(result.counterexamples.get(name)),
            }
            for name in result.invariants
        },
        "deadlock": trace(result.deadlock),
    }
