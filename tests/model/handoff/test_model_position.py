"""Position in the model (issue 12 item 3): ``at_pos`` says a page holds its writer's KV
in every slot at the chunk index the table gives it."""

from __future__ import annotations

from kvproof.model.handoff import build_handoff
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.model.search.bmc import bmc
from kvproof.spec.variant import load_variant

SIZES = {"Req": 1, "Page": 2}


def _isolation(name: str, depth: int = 7):  # type: ignore[no-untyped-def]
    protocol = build_handoff(load_variant(name).switches)
    result = bmc(protocol, SIZES, depth, variant=name, invariants=["isolation"])
    return protocol, result.result("isolation")


def _read_page(protocol, iso):  # type: ignore[no-untyped-def]
    concrete = Concrete(Instance(protocol, SIZES))
    last = replay(iso.trace, concrete)[-1]
    (p,) = [p for p in range(SIZES["Page"]) if concrete.value(last, "owns", (0, p))]
    return concrete, last, p


def test_placeholder_page_is_a_stale_read() -> None:
    protocol, iso = _isolation("sglang-0.5.19-pd")
    assert not iso.holds and iso.shortest == 7
    concrete, last, p = _read_page(protocol, iso)
    # r0 wrote its page (holds, filled) but only slot 0: the rest are prefill's leftovers.
    assert concrete.value(last, "holds", (p, 0)) and concrete.value(last, "filled", (p,))
    assert not concrete.value(last, "at_pos", (p,))


def test_head_trim_misplaces_every_chunk() -> None:
    protocol, iso = _isolation("vllm-nixl-push-head-trim")
    assert not iso.holds and iso.shortest == 7
    assert iso.trace.init["hit"][(0,)] is True
    concrete, last, p = _read_page(protocol, iso)
    assert concrete.value(last, "holds", (p, 0)) and not concrete.value(last, "at_pos", (p,))


def test_tail_trim_holds() -> None:
    _, iso = _isolation("vllm-nixl-push-fixed", depth=8)
    assert iso.holds


def test_no_prefix_cache_no_hit() -> None:
    """Without ``decode_prefix_cache`` the initial state fixes ``hit`` false."""
    protocol = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    concrete = Concrete(Instance(protocol, SIZES))
    assert all(not concrete.value(s, "hit", (0,)) for s in concrete.initial_states())
