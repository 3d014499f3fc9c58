"""vLLM startup log: KV cache size, per-request context, version and KV role.

Lines read (vLLM V1 ``kv_cache_utils.py``, ``api_server.py``, ``arg_utils``)::

    INFO 08-20 14:00:02 [api_server.py:1896] vLLM API server version 0.11.0
    INFO 08-20 14:00:02 [utils.py:233] non-default args: {..., 'max_model_len': 1048576,
        'block_size': 64, 'kv_transfer_config': KVTransferConfig(..., kv_role='kv_producer')}
    (EngineCore_DP0 pid=2211) INFO ... GPU KV cache size: 2,902,470 tokens
    (EngineCore_DP0 pid=2211) INFO ... Maximum concurrency for 1,048,576 tokens per request: 2.77x
    (EngineCore_DP0 pid=2211) ERROR ... [nixl_connector.py:...] Potentially invalid KV blocks
        for unrecognized request cmpl-... were retrieved by a decode worker. They may have expired.

The NIXL connector: ``kv_connector`` (``NixlConnector`` is ``NixlPullConnector``;
``NixlPushConnector`` since #35264) and ``kv_connector_extra_config.kv_lease_duration``
(``get_from_extra_config("kv_lease_duration", 30)`` in kv_connector/v1/nixl; #41383). The
error line is logged by the prefill worker when a decode read a request whose lease it no
longer tracks (expired or unknown): the request itself still answers 200.

``non-default args`` also lists ``api_key``: it is never read.
"""

from __future__ import annotations

import re

from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.textfile import Anchor, last_line_no, numbered, to_int
from kvproof.spec.errors import KvproofInputError

KV_SIZE = Anchor(
    "GPU KV cache size", "GPU KV cache size:", re.compile(r"GPU KV cache size: ([\d,]+) tokens")
)
CONCURRENCY = Anchor(
    "Maximum concurrency for N tokens per request",
    "Maximum concurrency for",
    re.compile(r"Maximum concurrency for ([\d,]+) tokens per request"),
)
MAX_MODEL_LEN = re.compile(r"(?:'max_model_len': |Using max model len |max_seq_len=)(\d+)")
VERSION = re.compile(r"(?:vLLM API server version |LLM engine \(v)(\d+\.\d+[\w.+-]*?)\)?(?:\s|$)")
KV_ROLE = re.compile(r"kv_role['\"]?\s*[:=]\s*['\"](kv_producer|kv_consumer|kv_both)['\"]")
BLOCK_SIZE = re.compile(r"'block_size': (\d+)")
KV_CONNECTOR = re.compile(r"kv_connector['\"]?\s*[:=]\s*['\"](\w+)['\"]")
LEASE = re.compile(r"kv_lease_duration['\"]?\s*[:=]\s*['\"]?(\d+(?:\.\d+)?)")
LEASE_ERROR = "Potentially invalid KV blocks for unrecognized request"

# kv_both serves either side (NixlConnector): the role must come from --role or the TOML.
_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode"}

MARKERS = ("GPU KV cache size", "vLLM API server version", "LLM engine (v", "kv_cache_utils.py")


def parse(text: str, path: str) -> FileFacts:
    facts: dict[str, Fact] = {}
    expired: list[str] = []
    for no, line in numbered(text):
        where = f"{path}:{no}"
        if "version" not in facts and (m := VERSION.search(line)):
            facts["version"] = Fact(m.group(1), where)
        if "context_len" not in facts and (m := MAX_MODEL_LEN.search(line)):
            facts["context_len"] = Fact(int(m.group(1)), where)
        if "role" not in facts and (m := KV_ROLE.search(line)) and m.group(1) in _ROLES:
            facts["role"] = Fact(_ROLES[m.group(1)], where)
        if "page_size" not in facts and (m := BLOCK_SIZE.search(line)):
            facts["page_size"] = Fact(int(m.group(1)), where)
        if "kv_connector" not in facts and (m := KV_CONNECTOR.search(line)):
            facts["kv_connector"] = Fact(m.group(1), where)
        if "kv_lease_duration_s" not in facts and (m := LEASE.search(line)):
            facts["kv_lease_duration_s"] = Fact(float(m.group(1)), where)
        if LEASE_ERROR in line:
            expired.append(where)
    for match, no in CONCURRENCY.find_all(text, path):
        # The concurrency line is computed from max_model_len: the context the engine admits.
        facts["context_len"] = Fact(to_int(match.group(1)), f"{path}:{no}")
    sizes = KV_SIZE.find_all(text, path)
    if not sizes:
        raise KvproofInputError(
            "vLLM log ends before 'GPU KV cache size: N tokens' (truncated?)",
            f"{path}:{last_line_no(text)}",
        )
    if expired:
        # Evidence is the first such line; the count is how many the log holds.
        facts["lease_expired_reads"] = Fact(len(expired), expired[0])
    match, no = min(sizes, key=lambda m: to_int(m[0].group(1)))
    facts["pool_tokens"] = Fact(to_int(match.group(1)), f"{path}:{no}")
    return FileFacts(path=path, format="vllm-log", engine="vllm", facts=facts)
