"""One canonical form per counterexample, so regenerating the corpus gives the same files.

Z3's choice among equally short counterexamples is not stable across processes (the same
trace comes back on page 0 in one run and on page 1 in another; the initial values of a
request the trace never touches vary too). ``canonical`` picks one representative: pages
renamed in order of first use (only for a sort the protocol declares symmetric), and the
rigid values of elements no step names set to their defaults. The result is re-checked by
the concrete interpreter; if it does not end in the same violation, the trace is kept.
"""

from __future__ import annotations

from dataclasses import replace

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace, replay


def canonical(trace: Trace, protocol: Protocol) -> Trace:
    """``trace`` with symmetric elements renamed by first use and untouched ones defaulted."""
    out = trace
    for sort in protocol.symmetric:
        out = _rename(out, protocol, sort)
    out = _default_untouched(out, protocol)
    return out if _same_violation(out, trace, protocol) else trace


def _positions(protocol: Protocol, inst: ActionInstance, sort: str) -> list[int]:
    params = protocol.action(inst.action).params
    return [i for i, s in enumerate(params) if s == sort]


def _rename(trace: Trace, protocol: Protocol, sort: str) -> Trace:
    order: list[int] = []
    for inst in trace.steps:
        for i in _positions(protocol, inst, sort):
            if inst.args[i] not in order:
                order.append(inst.args[i])
    order += [x for x in range(trace.sizes[sort]) if x not in order]
    new = {old: n for n, old in enumerate(order)}
    if all(k == v for k, v in new.items()):
        return trace
    steps = []
    for inst in trace.steps:
        args = list(inst.args)
        for i in _positions(protocol, inst, sort):
            args[i] = new[args[i]]
        steps.append(ActionInstance(inst.action, tuple(args)))
    init = {}
    for var, cells in trace.init.items():
        sorts = protocol.var(var).args
        init[var] = {
            tuple(new[a] if s == sort else a for s, a in zip(sorts, key, strict=True)): v
            for key, v in cells.items()
        }
    return replace(trace, steps=tuple(steps), init=init)


def _default_untouched(trace: Trace, protocol: Protocol) -> Trace:
    used: dict[str, set[int]] = {}
    for inst in trace.steps:
        for s, a in zip(protocol.action(inst.action).params, inst.args, strict=True):
            used.setdefault(s, set()).add(a)
    init = {}
    for var, cells in trace.init.items():
        v = protocol.var(var)
        init[var] = {
            key: (
                val
                if all(a in used.get(s, set()) for s, a in zip(v.args, key, strict=True))
                else v.default
            )
            for key, val in cells.items()
        }
    return replace(trace, init=init)


def _same_violation(new: Trace, old: Trace, protocol: Protocol) -> bool:
    concrete = Concrete(Instance(protocol, new.sizes))
    try:
        states = replay(new, concrete)
    except ReplayError:
        return False
    if not concrete.holds(protocol.init, states[0]):
        return False
    return old.violated is None or old.violated in concrete.violated(states[-1])
