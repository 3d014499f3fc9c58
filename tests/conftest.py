"""Hypothesis profiles: 'ci' (derandomized, the default under CI) and 'dev'; one torch
thread for the session; the ``slow`` marker (``-m "not slow"`` is the fast inner loop)."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """The tiny models' ops are microseconds; intra-op threads only add wake-up latency
    (35x slower with 2 threads on the 2-core CI box). Set once per session, here, never at
    import time: only when a collected test module has imported torch (model-only runs
    never load it)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
