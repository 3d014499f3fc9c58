"""The virtual clock: a lease's or a watchdog's expiry is a jump past the deadline the code
itself stamped, never a wall-clock wait.

Installed as the ``time`` global of each module that reads it on the decision path
(``nixl/base_scheduler.py``, ``pull_scheduler.py``, ``push_scheduler.py`` stamp leases and
heartbeat times with ``time.perf_counter()``; ``base_worker.py``, ``pull_worker.py``,
``push_worker.py`` compare with it; ``v1/core/sched/scheduler.py`` reads ``time.time()``/
``monotonic()`` for arrival and stats). The clock class is the SGLang side's.
"""

from __future__ import annotations

from typing import Any

from kvproof.checker.upstream.clock import Clock

NIXL = "vllm.distributed.kv_transfer.kv_connector.v1.nixl"
TIMED = (
    f"{NIXL}.base_scheduler",
    f"{NIXL}.pull_scheduler",
    f"{NIXL}.push_scheduler",
    f"{NIXL}.base_worker",
    f"{NIXL}.pull_worker",
    f"{NIXL}.push_worker",
    "vllm.v1.core.sched.scheduler",
)


def install(mods: dict[str, Any], clock: Clock) -> None:
    for name in TIMED:
        if getattr(mods[name], "time", None) is not None:
            mods[name].time = clock


__all__ = ["TIMED", "Clock", "install"]
