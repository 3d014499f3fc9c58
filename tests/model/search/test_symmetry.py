"""Symmetry reduction loses nothing: the same verdicts and shortest lengths with and without
it on every catalog variant, and the two-sort representative is exact (a permuted state
gets the same one, different orbits different ones)."""

from __future__ import annotations

import itertools
import random

import pytest

from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.search.explore import explore
from kvproof.model.search.symmetry import canonicaliser
from kvproof.spec.variant import list_variants, load_variant

VARIANTS = list_variants()
SMALL = {"Req": 2, "Page": 2}


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_same_verdicts_with_and_without_symmetry(variant) -> None:
    protocol = protocol_of(variant)  # under the variant's assumptions, as check runs it
    plain = explore(protocol, SMALL, variant=variant.name, symmetry=())
    pages = explore(protocol, SMALL, variant=variant.name, symmetry=("Page",))
    both = explore(protocol, SMALL, variant=variant.name, symmetry=("Req", "Page"))
    assert not (plain.truncated or pages.truncated or both.truncated)
    assert both.states < pages.states < plain.states
    for reduced in (pages, both):
        assert reduced.diameter == plain.diameter
        for inv in plain.invariants:
            assert reduced.holds(inv) == plain.holds(inv), inv
            assert reduced.shortest(inv) == plain.shortest(inv), inv
        assert (reduced.deadlocks == 0) == (plain.deadlocks == 0)
    for inv in plain.invariants:  # and the verdicts are the variant's
        assert ("holds" if both.holds(inv) else "violated") == variant.expect[inv], inv


def _permute(concrete: Concrete, data, req: tuple[int, ...], page: tuple[int, ...]):
    """``data`` with request ``i`` renamed ``req[i]`` and page ``j`` renamed ``page[j]``."""
    perm = {"Req": req, "Page": page}
    out = []
    for i, v in enumerate(concrete.protocol.vars):
        cells = concrete.cells[v.name]
        row = list(data[i])
        for j, args in enumerate(cells):
            moved = tuple(perm[s][a] if s in perm else a for s, a in zip(v.args, args, strict=True))
            row[concrete.inst.flat(v.name, moved)] = data[i][j]
        out.append(tuple(row))
    return tuple(out)


@pytest.mark.parametrize("name", ["sglang-0.5.19-pd", "sglang-pd-decode-radix-race"])
def test_two_sort_representative_is_exact(name: str) -> None:
    protocol = build_handoff(load_variant(name).switches)
    sizes = {"Req": 3, "Page": 3}
    concrete = Concrete(Instance(protocol, sizes))
    canon = canonicaliser(concrete, ("Req", "Page"))
    states = explore(protocol, sizes, symmetry=(), graph=True, max_states=3000).graph
    sample = random.Random(0).sample([d["state"].data for _, d in states.nodes(data=True)], 40)
    perms = [
        (r, p) for r in itertools.permutations(range(3)) for p in itertools.permutations(range(3))
    ]
    reps = {}
    for data in sample:
        rep = canon(data)
        assert canon(rep) == rep  # a representative is its own
        for r, p in random.Random(1).sample(perms, 8):
            assert canon(_permute(concrete, data, r, p)) == rep
        orbit = {_permute(concrete, data, r, p) for r, p in perms}
        reps.setdefault(rep, orbit)
        assert reps[rep] == orbit  # one representative, one orbit
