"""SGLang ``/metrics`` (Prometheus text): how long KV transfers took.

    sglang:kv_transfer_latency_ms_bucket{le="5000.0",...} 1938.0

``sglang:kv_transfer_latency_ms`` is a histogram in python/sglang/srt/metrics/collector.py
(buckets 1 ms .. 5000 ms; in some versions it is a gauge, which proves nothing about the
slowest transfer and is ignored). It gives no pool size: pair it with the node's log or
``/server_info`` in a deployment TOML.
"""

from __future__ import annotations

from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.prometheus import samples, slowest_above

MARKER = "sglang:"


def parse(text: str, path: str) -> FileFacts:
    facts: dict[str, Fact] = {}
    slow = slowest_above(list(samples(text, path)), "sglang:kv_transfer_latency_ms", 0.001)
    if slow is not None:
        facts["slowest_transfer_s"] = Fact(slow[0], slow[1])
    return FileFacts(path=path, format="sglang-metrics", engine="sglang", facts=facts)
