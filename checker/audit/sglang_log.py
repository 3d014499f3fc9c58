"""SGLang startup log: the scheduler's pool and context lines, and the server args.

Lines read (SGLang ``scheduler.py`` / ``model_runner.py``; TP ranks repeat them)::

    [2026-08-20 14:03:27 TP0] KV Cache is allocated. #tokens: 681280, K size: ..., V size: ...
    [2026-08-20 14:03:41 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384,
        max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, ...
    [2026-08-20 14:02:11] server_args=ServerArgs(model_path=..., page_size=64,
        disaggregation_mode='prefill', api_key='...', ...)

The ``api_key`` in ``ServerArgs(...)`` is never read.
"""

from __future__ import annotations

import re

from kvproof.checker.audit.facts import Fact, FileFacts
from kvproof.checker.audit.textfile import Anchor, last_line_no, numbered
from kvproof.spec.errors import KvproofInputError

KV_ALLOCATED = Anchor(
    "KV Cache is allocated", "KV Cache is allocated", re.compile(r"#tokens: (\d+),")
)
SCHEDULER = Anchor(
    "max_total_num_tokens=...",
    "max_total_num_tokens=",
    re.compile(r"max_total_num_tokens=(\d+),.*\bcontext_len=(\d+)\b"),
)
SERVER_ARGS = Anchor(
    "server_args=ServerArgs(...)", "ServerArgs(", re.compile(r"ServerArgs\((.*)\)")
)
VERSION = re.compile(r"\bsglang\W+(?:version\W+)?v?(\d+\.\d+\.\d+[\w.+-]*)", re.IGNORECASE)

# Server arguments the audit reads; the two booleans are the 0.5.22-era switches.
_ARG_KEYS = (
    "page_size",
    "context_length",
    "disaggregation_mode",
    "disaggregation_deferred_kv_release",
    "disaggregation_transfer_checksum",
)

MARKERS = ("KV Cache is allocated", "max_total_num_tokens=", "ServerArgs(", "sglang")


def _arg(args: str, key: str) -> str | None:
    match = re.search(rf"\b{key}=('[^']*'|\"[^\"]*\"|[^,)]+)", args)
    return match.group(1).strip("'\"") if match else None


def _server_args(text: str, path: str) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    found = SERVER_ARGS.find_all(text, path)
    if not found:
        return facts
    match, no = found[0]
    where = f"{path}:{no}"
    args = {k: _arg(match.group(1), k) for k in _ARG_KEYS}
    if args["page_size"] and args["page_size"].isdigit():
        facts["page_size"] = Fact(int(args["page_size"]), where)
    if args["context_length"] and args["context_length"].isdigit():
        # The scheduler's context_len (read later) is the effective one and wins.
        facts["context_len"] = Fact(int(args["context_length"]), where)
    mode = args["disaggregation_mode"]
    if mode is not None:
        if mode not in ("null", "None", "prefill", "decode"):
            raise KvproofInputError("unknown disaggregation_mode in ServerArgs", where)
        facts["role"] = Fact(mode if mode in ("prefill", "decode") else "single", where)
    for key, fact in (
        ("disaggregation_deferred_kv_release", "deferred_release"),
        ("disaggregation_transfer_checksum", "transfer_checksum"),
    ):
        if args[key] in ("True", "False"):
            facts[fact] = Fact(args[key] == "True", where)
    return facts


def parse(text: str, path: str) -> FileFacts:
    facts = _server_args(text, path)
    for no, line in numbered(text):
        match = VERSION.search(line)
        if match:
            facts["version"] = Fact(match.group(1), f"{path}:{no}")
            break
    scheduler = SCHEDULER.find_all(text, path)
    allocated = KV_ALLOCATED.find_all(text, path)
    if scheduler:
        # Data-parallel ranks may size their pools differently: the smallest decides.
        match, no = min(scheduler, key=lambda m: int(m[0].group(1)))
        facts["pool_tokens"] = Fact(int(match.group(1)), f"{path}:{no}")
        facts["context_len"] = Fact(int(match.group(2)), f"{path}:{no}")
    elif allocated:
        match, no = min(allocated, key=lambda m: int(m[0].group(1)))
        facts["pool_tokens"] = Fact(int(match.group(1)), f"{path}:{no}")
    else:
        raise KvproofInputError(
            "SGLang log ends before the KV pool was allocated (no 'KV Cache is allocated' "
            "or 'max_total_num_tokens=' line; truncated?)",
            f"{path}:{last_line_no(text)}",
        )
    return FileFacts(path=path, format="sglang-log", engine="sglang", facts=facts)
