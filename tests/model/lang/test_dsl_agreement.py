"""Each action is written once; its concrete and Z3 interpretations must agree.

Random states and action instances (Hypothesis): the guard and every updated cell computed
by the Z3 backend, with the state's values substituted, equal the plain Python result.
"""

from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from kvproof.model.handoff import build_handoff
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.context import Ctx, apply_row
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.logic import Z3Logic
from kvproof.spec.variant import list_variants

VARIANTS = {v.name: v for v in list_variants()}
SIZES = {"Req": 2, "Page": 3}


def _state(draw, concrete: Concrete) -> State:  # type: ignore[no-untyped-def]
    data = []
    for v in concrete.protocol.vars:
        n = len(concrete.inst.cells(v))
        values = st.booleans() if v.kind == "bool" else st.sampled_from(v.kind.values)
        data.append(tuple(draw(st.lists(values, min_size=n, max_size=n))))
    return State(tuple(data))


class _Sym:
    def __init__(self, inst: Instance, cells: dict) -> None:  # type: ignore[type-arg]
        self.inst, self.cells = inst, cells

    def read(self, var: str, args: tuple) -> object:  # type: ignore[type-arg]
        return self.cells[var][self.inst.flat(var, args)]


@pytest.mark.slow
@settings(max_examples=150)
@given(data=st.data(), variant=st.sampled_from(sorted(VARIANTS)), enum_as_bv=st.booleans())
def test_concrete_and_symbolic_agree(data, variant: str, enum_as_bv: bool) -> None:  # type: ignore[no-untyped-def]
    protocol = build_handoff(VARIANTS[variant].switches)
    inst = Instance(protocol, SIZES)
    concrete = Concrete(inst)
    state = _state(data.draw, concrete)
    action = data.draw(st.sampled_from(inst.all_instances))

    enums = {v.kind.name: v.kind for v in protocol.vars if v.kind != "bool"}.values()
    logic = Z3Logic(dict(SIZES), enums, enum_as_bv=enum_as_bv)
    cells, subst = {}, []
    for v in protocol.vars:
        sort = logic.sort_of(v.kind)
        row = []
        for args, value in zip(inst.cells(v), state.data[inst.var_index[v.name]], strict=True):
            const = z3.Const(inst.describe(v.name, args), sort)
            row.append(const)
            subst.append((const, logic.lift(value, sort=sort)))
        cells[v.name] = row
    ctx = Ctx(logic, _Sym(inst, cells))
    protocol.action(action.action).body(ctx, *action.args)

    def value(term, sort):  # type: ignore[no-untyped-def]
        if isinstance(term, bool):
            return term
        t = z3.simplify(z3.substitute(logic.lift(term, sort=sort), *subst))
        return z3.is_true(t) if sort == z3.BoolSort() else logic.enum_value(t)

    guard = value(logic.and_(*ctx.guards), z3.BoolSort())
    expected = concrete.step(state, action)
    assert guard == (expected is not None)
    if expected is None:
        return
    for var, ops in ctx.ops.items():
        v = protocol.var(var)
        sort = logic.sort_of(v.kind)
        row = apply_row(logic, ops, inst.cells(v), cells[var])
        got = [value(t, sort) for t in row]
        assert tuple(got) == expected.data[inst.var_index[var]], var


@settings(max_examples=60)
@given(data=st.data(), variant=st.sampled_from(sorted(VARIANTS)))
def test_invariants_agree(data, variant: str) -> None:  # type: ignore[no-untyped-def]
    protocol = build_handoff(VARIANTS[variant].switches)
    inst = Instance(protocol, SIZES)
    concrete = Concrete(inst)
    state = _state(data.draw, concrete)
    enums = {v.kind.name: v.kind for v in protocol.vars if v.kind != "bool"}.values()
    logic = Z3Logic(dict(SIZES), enums, enum_as_bv=True)
    cells = {
        v.name: [
            logic.lift(x, sort=logic.sort_of(v.kind)) for x in state.data[inst.var_index[v.name]]
        ]
        for v in protocol.vars
    }
    ctx = Ctx(logic, _Sym(inst, cells))
    for inv in protocol.safety:
        sym = inv.body(ctx)
        sym = sym if isinstance(sym, bool) else z3.is_true(z3.simplify(sym))
        assert sym == concrete.check(inv, state), inv.name
