"""The NIXL worker's decision code, run unmodified on a worker built with
``object.__new__`` and its fields set by hand (its ``__init__`` loads NIXL and registers GPU
memory). The fields are the ones these methods read in the release; their names drift
between releases, so an adapter (``adapters.py``) names them per release.

Run real: ``start_load_kv`` (pull: ``nixl/pull_worker.py``, push: ``nixl/push_worker.py``),
``get_transfer_results`` (``nixl/base_worker.py``, and push's override), which calls
``_get_new_notifs``, ``_pop_done_transfers``, ``_try_release_xfer_handle``,
``_handle_failed_transfer``, ``_reap_expired_send_leases`` and ``_handle_heartbeat``.

Stood in (each named after the function it replaces): the agent (``agent.FakeNixlAgent``);
``_read_blocks_for_req`` (pull: the READ is posted by the walk's ``post``); the push writer
thread's notification forwarding (``_push_writer_loop`` step 4: the walk delivers); the
heartbeat handshake (``_send_heartbeats``: the heartbeat is the walk's to deliver);
``transfer_topo`` (one remote engine with the same block size: no post-processing);
``xfer_stats`` (a counter of what the code recorded).
"""

from __future__ import annotations

import queue
import threading
from collections import Counter, defaultdict
from types import SimpleNamespace as NS
from typing import Any

from kvproof.checker.conform.vllm.agent import FakeNixlAgent

PULL_WORKER = "vllm.distributed.kv_transfer.kv_connector.v1.nixl.pull_worker"
PUSH_WORKER = "vllm.distributed.kv_transfer.kv_connector.v1.nixl.push_worker"


class Stats:
    """``NixlKVConnectorStats``: counts each ``record_*`` call the decision code makes."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("record_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.counts.update([name])


class _Topo:
    def get_engine_info(self, engine_id: str) -> Any:
        return NS(remote_block_size=16, remote_physical_blocks_per_logical=1)

    def block_size_ratio(self, remote_block_size: int) -> int:
        return 1


def build_worker(mods: dict[str, Any], mode: str, agent: FakeNixlAgent, lease: int) -> Any:
    """A pull or push worker whose decisions run real against ``agent``."""
    cls_mod = mods[PUSH_WORKER if mode == "push" else PULL_WORKER]
    cls = cls_mod.NixlPushConnectorWorker if mode == "push" else cls_mod.NixlPullConnectorWorker
    w = object.__new__(cls)
    fields: dict[str, Any] = {
        "nixl_wrapper": agent,
        "xfer_stats": Stats(),
        "transfer_topo": _Topo(),
        "engine_id": agent.name,
        "tp_rank": 0,
        "world_size": 1,
        "pcp_rank": 0,
        "pcp_dcp_sharded": False,
        "use_mla": False,
        "use_host_buffer": False,
        "enable_permute_local_kv": False,
        "enable_heterogeneous_attn_post_process": False,
        "_has_mamba": False,
        "_is_hma_required": False,
        "_physical_blocks_per_logical_kv_block": 1,
        "_group_spec_types": [],
        # base_worker.py::__init__: "kv_lease_duration * 2 // 3"
        "_lease_extension": lease * 2 // 3,
        "_recving_metadata": {},
        "_recving_transfers": defaultdict(list),
        "_recv_failures": set(),
        "_failed_recv_reqs": queue.Queue(),
        "_invalid_block_ids": queue.Queue(),
        "_pending_recv_notifs": {},
        "_replicated_pcp_done_sending": set(),
        "_reqs_to_send": {},
        "_reqs_to_process": set(),
        "_ready_requests": queue.Queue(),
        "_failed_remote_engines": set(),
        "consumer_notification_counts_by_req": defaultdict(int),
        "expected_consumer_notifications_by_req": {},
        "_remote_agents": {},
        "_engine_last_active": {},
        # push_worker.py::__init__
        "_sending_transfers": defaultdict(list),
        "_send_failures": set(),
        "_sending_transfers_lock": threading.Lock(),
        "_pending_completion_notifs": queue.Queue(),
        "_evict_finished_inbox": queue.Queue(),
        "_finished_blocks_inbox": queue.Queue(),
        "_reg_send_inbox": queue.Queue(),
        "_push_writer_wake": threading.Event(),
    }
    for name, value in fields.items():
        object.__setattr__(w, name, value)
    w.posted = []  # (req_id) of each READ the code asked to post (pull)
    w._read_blocks_for_req = lambda req_id, meta: w.posted.append(req_id)
    w._send_heartbeats = lambda metadata: None
    w._cleanup_remote_engines = lambda: None  # pull peers' descriptors: none registered
    return w


def forward_notifs(w: Any, agent: FakeNixlAgent) -> None:
    """``push_worker.py::_push_writer_loop`` step 4: the writer forwards every notification
    that is not a registration to ``_pending_completion_notifs``."""
    for notifs in agent.get_new_notifs().values():
        for notif in notifs:
            w._pending_completion_notifs.put(notif)
