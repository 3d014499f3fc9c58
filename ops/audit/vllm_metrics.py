"""vLLM ``/metrics`` (Prometheus text): the block pool, NIXL transfer times and expiries.

    vllm:cache_config_info{block_size="64",...,num_gpu_blocks="45351",...} 1.0
    vllm:nixl_xfer_time_seconds_bucket{le="5.0",...} 1940.0

pool tokens = ``num_gpu_blocks * block_size``. ``vllm:nixl_xfer_time_seconds`` is the NIXL
connector's transfer-duration histogram (kv_connector/v1/nixl metrics; buckets up to 5 s).
The context length is not exported there; pair the metrics with the startup log or give
``advertised_context``.
"""

from __future__ import annotations

from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.prometheus import samples, slowest_above
from kvproof.ops.audit.textfile import last_line_no
from kvproof.spec.errors import KvproofInputError

MARKER = "vllm:"


def _positive(labels: dict[str, str], key: str, where: str) -> int:
    value = labels.get(key, "")
    if not value.isdigit() or int(value) <= 0:
        raise KvproofInputError(f"vllm:cache_config_info needs a positive {key}", where)
    return int(value)


def parse(text: str, path: str) -> FileFacts:
    facts: dict[str, Fact] = {}
    found = list(samples(text, path))
    for s in found:
        if s.name == "vllm:cache_config_info":
            blocks = _positive(s.labels, "num_gpu_blocks", s.where)
            block_size = _positive(s.labels, "block_size", s.where)
            facts["pool_tokens"] = Fact(blocks * block_size, s.where)
            facts["page_size"] = Fact(block_size, s.where)
    if "pool_tokens" not in facts:
        raise KvproofInputError(
            "no vllm:cache_config_info sample (truncated metrics?)",
            f"{path}:{last_line_no(text)}",
        )
    slow = slowest_above(found, "vllm:nixl_xfer_time_seconds", 1.0)
    if slow is not None:
        facts["slowest_transfer_s"] = Fact(slow[0], slow[1])
    return FileFacts(path=path, format="vllm-metrics", engine="vllm", facts=facts)
