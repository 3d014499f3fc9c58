"""A virtual clock for the release's modules: the model's ``timeout`` and ``give_up`` are
jumps past a deadline the code itself computed, never wall-clock waits.

Installed as the ``time`` global of each real module (``decode.py`` reads
``time.monotonic()`` for the deferred-release deadline, ``common/conn.py`` and
``mooncake/conn.py`` read ``time.time()`` for the waiting timeout).
"""

from __future__ import annotations

import time as _time
from typing import Any


class Clock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def time(self) -> float:
        return self.now

    monotonic = perf_counter = time

    def jump_to(self, when: float) -> None:
        """Past ``when`` (deadlines compare with ``<``/``>=``); never backwards."""
        self.now = max(self.now, when + 0.001)

    def __getattr__(self, name: str) -> Any:  # sleep, strftime, ...: the real module's
        return getattr(_time, name)
