"""The projection compared after every step: the SGLang side's (which decode blocks a
request holds, whether it was aborted, whether it committed) plus prefill's source blocks:
whether they went back before the transfer that needs them was over, and whether a READ
(pull) or WRITE (push) of them was in flight when they did.

Switch values the comparison reads from the variant (``spec/variants/vllm-*.toml``):
``transfer_mode`` (which side posts), ``prefill_hold`` (``until_read``: the source is held
until the transfer ends, so an early free contradicts it; ``lease``: an early free is the
model's ``expire``), ``abort_notifies_prefill``/``abort_ack`` (an aborted decode's blocks
come back on prefill's ACK), and the ``lease_outlives_read`` assumption (the lease expires
only after decode's reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.checker.conform.vllm.pair import Pair
from kvproof.model.lang.concrete import Concrete, State


@dataclass(frozen=True)
class Mismatch:
    request: int
    what: str  # decode_holds | committed | source_lost | source_inflight_at_free
    model: Any
    code: Any

    def line(self) -> str:
        return f"r{self.request} {self.what}: model {self.model}, code {self.code}"


def rid(r: int) -> str:
    return f"r{r}"


def model_holds(concrete: Concrete, state: State, r: int) -> bool | None:
    """``None`` while decode preallocates (``queued``): vLLM allocates and parks in one
    ``schedule()``, which is the model's ``send``."""
    if concrete.value(state, "dphase", (r,)) == "queued":
        return None
    pages = concrete.inst.sizes["Page"]
    return any(concrete.value(state, "owns", (r, p)) for p in range(pages))


def model_source_lost(concrete: Concrete, state: State, r: int) -> bool:
    arrived = concrete.value(state, "dphase", (r,)) != "idle"
    return bool(arrived and not concrete.value(state, "src_ok", (r,)))


def compare(
    concrete: Concrete,
    state: State,
    pair: Pair,
    committed: set[int],
    lost_inflight: set[int],
) -> list[Mismatch]:
    out: list[Mismatch] = []
    for r in range(concrete.inst.sizes["Req"]):
        name = rid(r)
        pairs = (
            ("decode_holds", model_holds(concrete, state, r), bool(pair.d.blocks(name))),
            ("committed", r in committed, name in pair.ran),
            ("source_lost", model_source_lost(concrete, state, r), name in pair.src_freed_early),
            (
                "source_inflight_at_free",
                r in lost_inflight,
                name in pair.src_freed_inflight and name in pair.src_freed_early,
            ),
        )
        out += [Mismatch(r, what, m, c) for what, m, c in pairs if m is not None and m != c]
    return out


def switch_for(m: Mismatch, variant: Any, last: dict[int, str]) -> str:
    """The switch or assumption the code contradicts."""
    sw = variant.switches
    if m.what in ("source_lost", "source_inflight_at_free"):
        if "lease_outlives_read" in variant.assume:
            return "lease_outlives_read"
        return "prefill_hold"
    if m.what == "decode_holds" and last.get(m.request) == "ack":
        push = sw.transfer_mode == "push"
        return "abort_notifies_prefill" if push and sw.abort_notifies_prefill else "abort_ack"
    if m.what == "committed":
        return "failure_status"
    return "release"
