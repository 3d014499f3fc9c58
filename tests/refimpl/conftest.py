from __future__ import annotations

import pytest

from kvproof.spec.variant import Sizes


@pytest.fixture
def small() -> Sizes:
    """Small pools so that pages get reused within a few requests."""
    return Sizes(context_len=128, prefill_pool_tokens=256, decode_pool_tokens=256, page_size=8)
