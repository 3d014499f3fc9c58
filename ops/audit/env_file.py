"""A node's launch environment: a launch script or a Kubernetes pod spec's ``env:`` list.

``/server_info`` shows the environment only with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``; where an
operator cannot restart the server, the file that starts it says the same. Two shapes:

- a launch script: ``export NAME=value`` / ``NAME=value`` lines, or ``NAME=value`` words
  before ``python -m sglang.launch_server``, and the launch flags
  (``--disaggregation-mode prefill``, ``--disaggregation-enable-kv-checksum``, ...);
- a pod spec (YAML): ``- name: NAME`` followed by ``value: "..."``. ``valueFrom`` (a secret
  or config map) is not resolved: that variable stays unknown.

Only the variables and flags the audit knows are read; anything else (``--api-key``, tokens,
``HF_TOKEN``) is skipped without being stored, so it can never be printed.
"""

from __future__ import annotations

import re
import shlex

from kvproof.ops.audit import sglang_env
from kvproof.ops.audit.facts import Fact, FileFacts
from kvproof.ops.audit.sglang_args import MODES
from kvproof.ops.audit.textfile import numbered
from kvproof.spec.errors import KvproofInputError

ASSIGN = re.compile(r"(?:^|\s)(?:export\s+)?([A-Z_][A-Z0-9_]*)=((?:\"[^\"]*\"|'[^']*'|\S)*)")
K8S_NAME = re.compile(r"^\s*-\s*name:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?\s*$")
K8S_VALUE = re.compile(r"^\s*value:\s*(.*?)\s*$")

CHECKSUM_FLAG = "--disaggregation-enable-kv-checksum"
# launch flag -> (fact, takes a value)
FLAGS = {
    "--disaggregation-mode": ("role", True),
    "--disaggregation-transfer-backend": ("transfer_backend", True),
    "--disaggregation-enable-kv-checksum": ("transfer_checksum", False),
    "--disaggregation-decode-enable-radix-cache": ("decode_radix_cache", False),
    "--page-size": ("page_size", True),
}


def looks_like(text: str) -> bool:
    """A launch script or pod spec (checked before the log formats: both mention sglang)."""
    lines = [line for _, line in numbered(text) if line.strip()]
    if not lines:
        return False
    if lines[0].startswith("#!") or any(line.lstrip().startswith("export ") for line in lines):
        return True
    return any(K8S_NAME.match(line) for line in lines) and any(
        line.strip().startswith(("env:", "kind:", "apiVersion:")) for line in lines
    )


def _unquote(raw: str) -> str:
    try:
        parts = shlex.split(raw)
    except ValueError:
        return raw.strip("'\"")
    return parts[0] if parts else ""


def _k8s(text: str, path: str) -> dict[str, tuple[object, str]]:
    env: dict[str, tuple[object, str]] = {}
    pending: str | None = None
    for no, line in numbered(text):
        if m := K8S_NAME.match(line):
            pending = m.group(1)
            continue
        if pending and (m := K8S_VALUE.match(line)) and not sglang_env.is_secret(pending):
            env[pending] = (_unquote(m.group(1)), f"{path}:{no}")
        pending = None  # ``value:`` follows ``- name:`` at once; anything else ends the item
    return env


def _logical(text: str) -> list[tuple[int, str]]:
    """Lines with ``\\`` continuations joined, numbered by their first line."""
    out: list[tuple[int, str]] = []
    start, parts = 0, list[str]()
    for no, line in numbered(text):
        if not parts:
            start = no
        parts.append(line.rstrip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            out.append((start, " ".join(parts)))
            parts = []
    if parts:
        out.append((start, " ".join(parts)))
    return out


def _script(text: str, path: str) -> tuple[dict[str, tuple[object, str]], dict[str, Fact]]:
    env: dict[str, tuple[object, str]] = {}
    flags: dict[str, Fact] = {}
    for no, line in _logical(text):
        where = f"{path}:{no}"
        if line.lstrip().startswith("#"):
            continue
        for m in ASSIGN.finditer(line):
            if not sglang_env.is_secret(m.group(1)):
                env[m.group(1)] = (_unquote(m.group(2)), where)
        words = line.split()
        for i, word in enumerate(words):
            flag, _, inline = word.partition("=")
            if flag not in FLAGS:
                continue
            fact, takes = FLAGS[flag]
            if not takes:
                flags[fact] = Fact(True, where)
                continue
            value = inline or (words[i + 1] if i + 1 < len(words) else "")
            flags[fact] = Fact(_flag_value(fact, _unquote(value), flag, where), where)
    return env, flags


def _flag_value(fact: str, value: str, flag: str, where: str) -> int | str:
    if fact == "role":
        if value not in MODES:
            raise KvproofInputError(f"{flag} must be null, prefill or decode", where)
        return MODES[value]
    if fact == "page_size":
        if not value.isdigit() or int(value) <= 0:
            raise KvproofInputError(f"{flag} must be a positive integer", where)
        return int(value)
    if not value or value.startswith("-"):
        raise KvproofInputError(f"{flag} needs a value", where)
    return value


def parse(text: str, path: str) -> FileFacts:
    k8s = any(K8S_NAME.match(line) for _, line in numbered(text))
    env, flags = (_k8s(text, path), {}) if k8s else _script(text, path)
    engine = "vllm" if re.search(r"\bvllm\s+serve\b|\bVLLM_", text) else "sglang"
    facts = sglang_env.env_facts(env, path) if engine == "sglang" else {}
    facts.update(flags)
    launch = next((f"{path}:{no}" for no, line in numbered(text) if "launch_server" in line), None)
    if engine == "sglang" and not k8s and launch and "transfer_checksum" not in facts:
        # The flag is store_true: a launch line without it starts with the checksum off.
        facts["transfer_checksum"] = Fact(False, f"{launch} (no {CHECKSUM_FLAG})")
    return FileFacts(path=path, format="env-file", engine=engine, facts=facts)
