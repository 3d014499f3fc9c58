"""vLLM ``/metrics`` (Prometheus text): ``vllm:cache_config_info`` gives the pool.

    vllm:cache_config_info{block_size="64",...,num_gpu_blocks="45351",...} 1.0

pool tokens = ``num_gpu_blocks * block_size``. The context length is not exported there;
pair the metrics with the startup log or give ``advertised_context``.
"""

from __future__ import annotations

import re

from kvproof.checker.audit.facts import Fact, FileFacts
from kvproof.checker.audit.textfile import last_line_no, numbered
from kvproof.spec.errors import KvproofInputError

# name{labels} value [timestamp]; labels are checked apart, so a cut-off line is caught.
SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>.*)\})?\s+"
    r"(?P<value>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|Inf|NaN))(?:\s+-?\d+)?$"
)
LABEL = re.compile(r'\s*(\w+)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')
MARKER = "vllm:"


def _labels(text: str, where: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = LABEL.match(text, pos)
        if match is None:
            raise KvproofInputError("malformed metric labels (truncated?)", where)
        labels[match.group(1)] = match.group(2)
        pos = match.end()
    return labels


def _positive(labels: dict[str, str], key: str, where: str) -> int:
    value = labels.get(key, "")
    if not value.isdigit() or int(value) <= 0:
        raise KvproofInputError(f"vllm:cache_config_info needs a positive {key}", where)
    return int(value)


def parse(text: str, path: str) -> FileFacts:
    facts: dict[str, Fact] = {}
    for no, line in numbered(text):
        where = f"{path}:{no}"
        if not line.strip() or line.startswith("#"):
            continue
        match = SAMPLE.match(line.strip())
        if match is None:
            raise KvproofInputError("malformed metrics line (truncated?)", where)
        labels = _labels(match.group("labels") or "", where)
        if match.group("name") == "vllm:cache_config_info":
            blocks = _positive(labels, "num_gpu_blocks", where)
            block_size = _positive(labels, "block_size", where)
            facts["pool_tokens"] = Fact(blocks * block_size, where)
            facts["page_size"] = Fact(block_size, where)
    if "pool_tokens" not in facts:
        raise KvproofInputError(
            "no vllm:cache_config_info sample (truncated metrics?)",
            f"{path}:{last_line_no(text)}",
        )
    return FileFacts(path=path, format="vllm-metrics", engine="vllm", facts=facts)
