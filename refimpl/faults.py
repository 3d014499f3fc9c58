"""Fault injection for the seeded scheduler: probabilities and an explicit schedule.

Every probability is per scheduler step (a small number gives a few faults per run). The
same ``FaultPlan`` and the same seed give the same event log.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.refimpl.events import Event


@dataclass(frozen=True)
class FaultPlan:
    fail: float = 0.0  # a transfer fails (Mooncake batch FAILED; posted writes still land)
    delay: float = 0.0  # completions (land, done, ack) held back this step
    reorder: float = 0.0  # a land completes out of posting order
    duplicate_status: float = 0.0  # a done/ack message is delivered twice
    lost_status: float = 0.0  # a done/ack message never arrives
    disconnect: float = 0.0  # a client disconnects (decode aborts the request)
    prefill_abort: float = 0.0  # an abort reaches prefill mid-transfer (timeout, client)
    timeout: float = 0.0  # decode stops waiting for the drain ACK (deferred_timeout)
    lease_expire: float = 0.0  # pull: prefill's lease on a request's blocks expires
    schedule: tuple[Event, ...] = ()  # applied in order, each as soon as it is enabled

    def __post_init__(self) -> None:
        for name in (
            "fail",
            "delay",
            "reorder",
            "duplicate_status",
            "lost_status",
            "disconnect",
            "prefill_abort",
            "timeout",
            "lease_expire",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"FaultPlan.{name} must be in [0, 1], got {value}")


NO_FAULTS = FaultPlan()
