"""SGLang startup log: the scheduler's pool and context lines, and the server args.

Lines read (SGLang ``scheduler.py`` / ``model_runner.py``; TP ranks repeat them)::

    [2026-08-20 14:03:27 TP0] KV Cache is allocated. #tokens: 681280, K size: ..., V size: ...
    [2026-08-20 14:03:41 TP0] max_total_num_tokens=681280, chunked_prefill_size=16384,
        max_prefill_tokens=16384, max_running_requests=64, context_len=1048576, ...

and the server args in either form (see ``sglang_args``)::

    [2026-08-20 14:02:11] server_args=ServerArgs(model_path=..., page_size=64, ...)
    [2026-10-21 09:14:03] server_args={'model_path': ..., 'page_size': 64, ...}

SGLang itself prints no version line (the version comes from ``/server_info``); a
``sglang ... v0.5.x`` line a wrapper printed is read when present. The ``api_key`` in the
server args is never read.
"""

from __future__ import annotations

import re

from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.sglang_args import arg_facts, parse_logged
from kvproof.ops.audit.textfile import Anchor, last_line_no, numbered
from kvproof.spec.errors import KvproofInputError

KV_ALLOCATED = Anchor(
    "KV Cache is allocated", "KV Cache is allocated", re.compile(r"#tokens: (\d+),")
)
SCHEDULER = Anchor(
    "max_total_num_tokens=...",
    "max_total_num_tokens=",
    re.compile(r"max_total_num_tokens=(\d+),.*\bcontext_len=(\d+)\b"),
)
SERVER_ARGS = re.compile(r"\bserver_args=(ServerArgs\(|\{)")
VERSION = re.compile(r"\bsglang\W+(?:version\W+)?v?(\d+\.\d+\.\d+[\w.+-]*)", re.IGNORECASE)

MARKERS = ("KV Cache is allocated", "max_total_num_tokens=", "server_args=", "sglang")


def _server_args(text: str, path: str) -> dict[str, Fact]:
    for no, line in numbered(text):
        match = SERVER_ARGS.search(line)
        if match is None:
            continue
        where = f"{path}:{no}"
        return arg_facts(parse_logged(line[match.start(1) :], where), where, key_where=False)
    return {}


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
        # The scheduler's context_len is the effective one and wins over the argument.
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
