"""Units as Ray tasks: on a local Ray (started here, shut down on close) or a cluster.

Each unit is one task with ``max_retries``: a worker lost mid-campaign (its process killed,
its node gone) is run again by Ray, and since a unit is a pure function of its arguments the
retry gives the same result. A unit that asks for GPUs (``fuzz --device cuda``) is placed by
Ray on a node with a free GPU; Ray sets ``CUDA_VISIBLE_DEVICES`` for the task.
(Ray docs, "Fault tolerance > Tasks": system failures are retried ``max_retries`` times,
default 3; "Accelerator support": ``num_gpus`` reserves GPUs and sets the variable.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kvproof.checker.distrib.executor import Closing, Unit, in_slots, run_unit
from kvproof.spec.errors import KvproofInputError

MAX_RETRIES = 3
EXTRA = "pip install 'kvproof[ray]'"


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise KvproofInputError(f"needs Ray, which is not installed: {EXTRA}", "--ray") from None
    return ray


class RayExecutor(Closing):
    """``address``: None starts a local Ray with ``num_cpus`` (and ``num_gpus`` /
    ``resources``, which tests use to declare a fake GPU on a CPU machine); ``auto`` or
    ``host:port`` joins a running cluster. A Ray already initialised in this process (a
    test's fixture, a notebook) is used as it is and left running."""

    forwards = "ray"  # progress on a ``ray.util.queue.Queue`` (``events.py``)

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        num_gpus: int | None = None,
        resources: Mapping[str, float] | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        ray = self._ray = import_ray()
        self._owned = not ray.is_initialized()
        if self._owned:
            if address is None:
                ray.init(
                    num_cpus=num_cpus,
                    num_gpus=num_gpus,
                    resources=dict(resources) if resources else None,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                )
            else:
                ray.init(address=address, logging_level=logging.WARNING)
        self._task = ray.remote(max_retries=max_retries)(run_unit)
        cluster = ray.cluster_resources()
        self.slots = max(1, int(cluster.get("CPU", 1)))
        self.gpus = int(cluster.get("GPU", 0))

    def imap(self, units: Iterable[Unit]) -> Iterator[tuple[int, Any]]:
        ray = self._ray

        def start(unit: Unit) -> Any:
            if unit.gpus and unit.gpus > self.gpus:
                raise KvproofInputError(
                    f"a unit asks for {unit.gpus} GPU(s); the Ray cluster has {self.gpus}",
                    "--device",
                )
            return self._task.options(num_cpus=1, num_gpus=unit.gpus).remote(unit)

        def first(refs: list[Any]) -> list[Any]:
            return ray.wait(refs, num_returns=1)[0]

        # One unit per slot in flight (and one queued), so a stop stops early.
        return in_slots(units, self.slots + 1, start, first, ray.get, ray.cancel)

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False
