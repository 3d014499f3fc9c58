from __future__ import annotations

import pytest

from kvproof.spec.variant import Sizes


@pytest.fixture
def small() -> Sizes:
    """Small pools so that pages get reused within a few requests."""
    return Sizes(context_len=128, prefill_pool_tokens=256, decode_pool_tokens=256, page_size=8)


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    """The tiny models' ops are microseconds; intra-op threads only add wake-up latency
    (35x slower with 2 threads on the 2-core CI box)."""
    import torch

    torch.set_num_threads(1)
