"""Which format a file is, and its parser.

Detection looks at content, not names: operators rename files. Order matters: a JSON
object is SGLang's ``/server_info``; metrics text is recognised by its ``vllm:`` or
``sglang:`` samples; a launch script or pod spec by its shape (before the logs: both
mention sglang); a vLLM log by lines only vLLM prints; an SGLang log by its scheduler lines.
"""

from __future__ import annotations

from collections.abc import Callable

from kvproof.ops.audit import (
    env_file,
    sglang_log,
    sglang_metrics,
    sglang_server_info,
    vllm_log,
    vllm_metrics,
)
from kvproof.ops.audit.facts import FileFacts
from kvproof.ops.audit.textfile import numbered, read_text
from kvproof.spec.errors import KvproofInputError

Parser = Callable[[str, str], FileFacts]

PARSERS: dict[str, Parser] = {
    "sglang-server-info": sglang_server_info.parse,
    "vllm-metrics": vllm_metrics.parse,
    "sglang-metrics": sglang_metrics.parse,
    "env-file": env_file.parse,
    "vllm-log": vllm_log.parse,
    "sglang-log": sglang_log.parse,
}


def _metrics(lines: list[str], prefix: str) -> bool:
    return any(line.startswith((prefix, f"# HELP {prefix}")) for line in lines)


def detect(text: str, path: str) -> str:
    stripped = text.lstrip()
    if not stripped:
        raise KvproofInputError("empty file", f"{path}:1")
    if stripped.startswith("{"):
        return "sglang-server-info"
    lines = [line for _, line in numbered(text)]
    if _metrics(lines, vllm_metrics.MARKER):
        return "vllm-metrics"
    if _metrics(lines, sglang_metrics.MARKER):
        return "sglang-metrics"
    if env_file.looks_like(text):
        return "env-file"
    if any(marker in line for line in lines for marker in vllm_log.MARKERS):
        return "vllm-log"
    if any(
        marker in line.lower()
        for line in lines
        for marker in (m.lower() for m in sglang_log.MARKERS)
    ):
        return "sglang-log"
    first = next(no for no, line in numbered(text) if line.strip())
    raise KvproofInputError(
        "unrecognised format: not an SGLang or vLLM startup log, SGLang /server_info JSON, "
        "/metrics text, launch script or pod spec, or deployment TOML",
        f"{path}:{first}",
    )


def read_facts(path: str) -> FileFacts:
    """Read, detect and parse one node file."""
    text = read_text(path)
    return PARSERS[detect(text, path)](text, path)
