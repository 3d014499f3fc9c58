"""One adapter per vLLM release: the worker fields and functions conform drives, which
drift between releases. A tree whose code differs from every adapter is refused (exit 2)
with one line naming what differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kvproof.spec.errors import KvproofInputError

NIXL = Path("vllm", "distributed", "kv_transfer", "kv_connector", "v1", "nixl")
N = "vllm/distributed/kv_transfer/kv_connector/v1/nixl"
SCHED = "vllm/v1/core/sched/scheduler.py"


@dataclass(frozen=True)
class Adapter:
    name: str
    # (file under the tree, a definition or field the harness relies on)
    needs: tuple[tuple[str, str], ...]
    exercised: tuple[str, ...]
    # ``VllmConfig`` fields this release's scheduler reads that others do not
    config: tuple[tuple[str, object], ...] = ()


R0340 = Adapter(
    "vllm-0.34",
    (
        (f"{N}/base_worker.py", "def _reap_expired_send_leases"),
        (f"{N}/base_worker.py", "def _pop_done_transfers"),
        (f"{N}/base_worker.py", "def _handle_failed_transfer"),
        (f"{N}/base_worker.py", "def _handle_heartbeat"),
        (f"{N}/base_worker.py", "self._recv_failures"),
        (f"{N}/base_worker.py", "self._reqs_to_send"),
        (f"{N}/pull_worker.py", "def _get_new_notifs"),
        (f"{N}/push_worker.py", "self._sending_transfers"),
        (f"{N}/push_worker.py", "self._pending_completion_notifs"),
        (f"{N}/pull_scheduler.py", "def request_finished"),
        (f"{N}/push_scheduler.py", "def request_finished"),
        (SCHED, "self._aborted_kv_loads"),
    ),
    (
        f"{SCHED}::Scheduler.__init__ / schedule / update_from_output / finish_requests",
        f"{SCHED}::Scheduler._update_from_kv_xfer_finished / _handle_failed_recving / "
        "_handle_invalid_blocks / _update_waiting_for_remote_kv / _free_request",
        "vllm/v1/core/kv_cache_manager.py::KVCacheManager (allocate_slots, free)",
        "vllm/v1/core/block_pool.py::BlockPool",
        f"{N}/pull_scheduler.py::NixlPullConnectorScheduler.get_num_new_matched_tokens / "
        "update_state_after_alloc / request_finished",
        f"{N}/push_scheduler.py::NixlPushConnectorScheduler.request_finished / "
        "build_connector_meta / update_connector_output",
        f"{N}/base_scheduler.py::NixlBaseConnectorScheduler.build_connector_meta / "
        "on_new_request / _stop_heartbeat",
        f"{N}/pull_worker.py::NixlPullConnectorWorker.start_load_kv / _get_new_notifs",
        f"{N}/push_worker.py::NixlPushConnectorWorker.start_load_kv / _get_new_notifs / "
        "get_transfer_results",
        f"{N}/base_worker.py::NixlBaseConnectorWorker.get_transfer_results / "
        "_pop_done_transfers / _try_release_xfer_handle / _handle_failed_transfer / "
        "_reap_expired_send_leases / _handle_heartbeat / get_block_ids_with_load_errors",
    ),
)
# 0.33.0: the same decision functions and worker fields; its scheduler keeps an aborted
# load's blocks (finish_requests: delay_free_blocks) without the _aborted_kv_loads set
# 0.34.0 added for admission accounting.
R0330 = Adapter(
    "vllm-0.33",
    tuple(n for n in R0340.needs if n[1] != "self._aborted_kv_loads"),
    R0340.exercised,
    # v1/core/sched/scheduler.py::Scheduler.__init__ reads vllm_config.use_v2_model_runner
    (("use_v2_model_runner", False),),
)
ADAPTERS = (R0340, R0330)


def select(tree: Path) -> Adapter:
    if not (tree / NIXL).is_dir():
        single = tree / NIXL.parent / "nixl_connector.py"
        has = " (it has the single-file nixl_connector.py)" if single.is_file() else ""
        raise KvproofInputError(
            f"no adapter: this vLLM has no {NIXL.as_posix()}/ package{has}", str(tree)
        )
    misses: list[str] = []
    for adapter in ADAPTERS:
        missing = [f"{f}: {what}" for f, what in adapter.needs if not _has(tree / f, what)]
        if not missing:
            return adapter
        misses.append(f"{adapter.name} needs {missing[0]}")
    raise KvproofInputError(f"no adapter for this vLLM ({'; '.join(misses)})", str(tree))


def _has(file: Path, text: str) -> bool:
    return file.is_file() and re.search(re.escape(text), file.read_text()) is not None
