"""What one server runs: the variant, the pool sizes, and the simulated timings.

The reference engine is tiny, so its compute time hardly depends on the prompt length.
Three knobs model what a real GPU cluster spends (simulation only, documented as such):
``prefill_us_per_token`` holds a request's KV transfer until prefill could have computed
the tokens it *actually* prefilled (1 for SGLang #30233's placeholder: the incident's only
visible symptom, an answer faster than a full prefill); ``transfer_us_per_page`` holds
each posted RDMA write that long before it lands (a window in which a client can
disconnect mid-transfer); ``decode_us_per_token`` spaces a request's decode steps (the
inter-token latency; 0: as fast as the reference engine runs, a few ms on a CPU), i.e. how
long a request keeps reading its pages, and so how long a late write can still reach it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.spec.variant import Sizes, Variant, load_variant

# The incident's deployment ratios (prefill pool < context): the danger window exists even
# when a fixed variant is served, so a fixed engine is tested where it matters (as the demo).
DEFAULT_SIZES_FROM = "sglang-0.5.19-pd"
MODEL_ID = "kvproof-echo"


@dataclass(frozen=True)
class ServeConfig:
    variant: Variant
    sizes: Sizes
    sizes_from: str
    prefill_us_per_token: float = 200.0
    transfer_us_per_page: float = 500.0
    decode_us_per_token: float = 0.0
    max_tokens_limit: int = 256
    seed: int = 0
    model_id: str = MODEL_ID

    @staticmethod
    def for_variant(name: str, *, own_sizes: bool = False, **knobs: float | int) -> ServeConfig:
        variant = load_variant(name)
        sizes_from = variant.name if own_sizes else DEFAULT_SIZES_FROM
        sizes = variant.engine_sizes if own_sizes else load_variant(sizes_from).engine_sizes
        return ServeConfig(variant, sizes, sizes_from, **knobs)  # type: ignore[arg-type]
