"""A deployment: nodes with roles, and the context the API advertises.

Nodes come either from a deployment TOML (files per node, roles, advertised context) or
from the files on the command line (one node per file, named by its stem). Roles come from
the data (SGLang ``disaggregation_mode``, vLLM ``kv_role``), overridden by the TOML or by
``--role``; a node whose role nothing states is ``single``.

Deployment TOML::

    name = "workers-ai-glm-5.3"
    advertised_context = 1048576        # what the API accepts (tokens)

    [[nodes]]
    name = "prefill-0"
    role = "prefill"                    # optional when the data says it
    files = ["prefill-0.log", "prefill-0.server_info.json"]   # relative to this file
    version = "0.5.19"                  # optional, when the files do not print it
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvproof.ops.audit.facts import ROLES, Fact, FileFacts
from kvproof.ops.audit.formats import read_facts
from kvproof.ops.audit.redact import scrub
from kvproof.ops.audit.settings import resolve
from kvproof.ops.audit.textfile import read_text
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class Node:
    name: str
    role: str  # prefill | decode | single
    engine: str  # sglang | vllm
    version: str | None
    pool_tokens: int
    context_len: int | None = None
    page_size: int | None = None
    max_req_input_len: int | None = None  # as the engine reports it (SGLang /server_info)
    # SGLang PD settings; None = unknown (see ``settings`` for the defaults filled in)
    deferred_release: bool | None = None
    transfer_checksum: bool | None = None
    transfer_backend: str | None = None
    decode_radix_cache: bool | None = None
    reserved_decode_tokens: int | None = None
    release_timeout_s: float | None = None
    waiting_timeout_s: float | None = None
    bootstrap_timeout_s: float | None = None
    heartbeat_interval_s: float | None = None
    heartbeat_max_failure: int | None = None
    env_exposed: bool = False
    slowest_transfer_s: float | None = None  # some transfer took longer (metrics)
    # vLLM NIXL connector
    kv_connector: str | None = None
    kv_lease_duration_s: float | None = None
    lease_expired_reads: int = 0
    sources: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    evidence: Mapping[str, str] = field(default_factory=dict)  # fact -> "path:line"


@dataclass(frozen=True)
class Deployment:
    name: str
    advertised_context: int
    advertised_from: str  # where the advertised context was read
    nodes: tuple[Node, ...]

    def with_role(self, role: str) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.role == role)


# Where two files of one node disagree on these, the engine's own report wins: /server_info
# is authoritative for the version and the pool (token_capacity), /metrics over the log.
AUTHORITY = {"sglang-server-info": 0, "vllm-metrics": 1}
AUTHORITATIVE = ("version", "pool_tokens", "max_req_input_len")


def _rank(file: FileFacts) -> int:
    return AUTHORITY.get(file.format, len(AUTHORITY))


def merge(name: str, files: Sequence[FileFacts], overrides: Mapping[str, Fact]) -> Node:
    """One node from its files; two files disagreeing on a setting is an input error."""
    engines = {f.engine for f in files}
    if len(engines) > 1:
        raise KvproofInputError(
            f"node '{name}' mixes engines ({', '.join(sorted(engines))})", files[0].path
        )
    facts: dict[str, Fact] = {}
    for file in sorted(files, key=_rank):
        for key, fact in file.facts.items():
            old = facts.get(key)
            if old is None:
                facts[key] = fact
            elif old.value != fact.value and key not in overrides and key not in AUTHORITATIVE:
                raise KvproofInputError(
                    f"node '{name}' has {key} {_shown(old.value)} at {old.where} but "
                    f"{_shown(fact.value)} here",
                    fact.where,
                )
    facts.update(overrides)
    if "pool_tokens" not in facts:
        raise KvproofInputError(f"node '{name}': no file gives the KV pool size", files[0].path)
    facts = resolve(files[0].engine, facts)
    values: dict[str, Any] = {k: f.value for k, f in facts.items()}
    return Node(
        name=name,
        role=str(values.pop("role", "single")),
        engine=files[0].engine,
        version=values.pop("version", None),
        sources=tuple(f.path for f in files),
        formats=tuple(f.format for f in files),
        evidence={k: f.where for k, f in facts.items()},
        **values,
    )


def _shown(value: object) -> str:
    # Facts are numbers, booleans and known names (a backend, a connector), never secrets;
    # scrubbed all the same, since an error message is output too.
    return scrub(str(value))


def _advertised(nodes: Sequence[Node], given: int | None, given_from: str) -> tuple[int, str]:
    if given is not None:
        return given, given_from
    known = [(n.context_len, n.evidence["context_len"]) for n in nodes if n.context_len]
    if not known:
        raise KvproofInputError(
            "no context length in the data: pass --context or set advertised_context",
            nodes[0].sources[0] if nodes else None,
        )
    # Without a stated API limit, the largest context a node was started with is what the
    # model card (and so the API) advertises.
    return max(known)


def parse_role(spec: str) -> tuple[str, str]:
    """``NAME_OR_PATH=ROLE`` from ``--role``."""
    key, sep, role = spec.rpartition("=")
    if not sep or not key or role not in ROLES:
        raise KvproofInputError(
            f"--role wants NAME_OR_PATH=ROLE with ROLE in {', '.join(ROLES)}", f"--role {spec}"
        )
    return key, role


def _role_override(roles: Mapping[str, str], name: str, path: str) -> dict[str, Fact]:
    for key in (name, path, Path(path).name):
        if key in roles:
            return {"role": Fact(roles[key], f"--role {key}={roles[key]}")}
    return {}


def from_files(
    paths: Sequence[str], roles: Mapping[str, str] | None = None, context: int | None = None
) -> Deployment:
    """One node per file, named by the file's stem."""
    roles = dict(roles or {})
    nodes = []
    for path in paths:
        name = Path(path).name.split(".")[0]
        nodes.append(merge(name, [read_facts(path)], _role_override(roles, name, path)))
    _check_roles_used(roles, [n.name for n in nodes], paths)
    advertised, where = _advertised(nodes, context, "--context")
    return Deployment("command line", advertised, where, tuple(nodes))


def _check_roles_used(roles: Mapping[str, str], names: Sequence[str], paths: Sequence[str]) -> None:
    known = set(names) | set(paths) | {Path(p).name for p in paths}
    for key in roles:
        if key not in known:
            raise KvproofInputError("names no node or file of this deployment", f"--role {key}")


_TOP = {"name": str, "advertised_context": int, "nodes": list}
_NODE = {"name": str, "role": str, "files": list, "version": str}


def _toml_error_line(message: str) -> str:
    match = re.search(r"line (\d+)", message)
    return match.group(1) if match else "1"


def _checked(table: Any, spec: Mapping[str, type], path: str, prefix: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise KvproofInputError("must be a table", f"{path}: {prefix.rstrip('.')}")
    for key, value in table.items():
        if key not in spec:
            raise KvproofInputError("unknown key", f"{path}: {prefix}{key}")
        if not isinstance(value, spec[key]) or isinstance(value, bool):
            raise KvproofInputError(f"must be a {spec[key].__name__}", f"{path}: {prefix}{key}")
    return table


def load_deployment(
    path: str, roles: Mapping[str, str] | None = None, context: int | None = None
) -> Deployment:
    """A deployment TOML (see the module docstring); ``--role``/``--context`` win over it."""
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise KvproofInputError("malformed TOML", f"{path}:{_toml_error_line(str(exc))}") from None
    _checked(data, _TOP, path, "")
    if not data.get("nodes"):
        raise KvproofInputError("a deployment needs at least one [[nodes]] table", f"{path}: nodes")
    base = Path(path).parent
    roles = dict(roles or {})
    nodes: list[Node] = []
    for i, raw in enumerate(data["nodes"]):
        prefix = f"nodes[{i}]."
        table = _checked(raw, _NODE, path, prefix)
        if "name" not in table or not table.get("files"):
            raise KvproofInputError("needs 'name' and a non-empty 'files'", f"{path}: nodes[{i}]")
        name = table["name"]
        if not all(isinstance(f, str) for f in table["files"]):
            raise KvproofInputError("must be a list of paths", f"{path}: {prefix}files")
        overrides: dict[str, Fact] = {}
        if "role" in table:
            if table["role"] not in ROLES:
                raise KvproofInputError(
                    f"must be one of {', '.join(ROLES)}", f"{path}: {prefix}role"
                )
            overrides["role"] = Fact(table["role"], f"{path}: {prefix}role")
        if "version" in table:
            overrides["version"] = Fact(table["version"].lstrip("v"), f"{path}: {prefix}version")
        if name in roles:
            overrides["role"] = Fact(roles[name], f"--role {name}={roles[name]}")
        files = [read_facts(str(base / f)) for f in table["files"]]
        nodes.append(merge(name, files, overrides))
    _check_roles_used(roles, [n.name for n in nodes], [])
    given_from = f"{path}: advertised_context"
    given = data.get("advertised_context")
    if context is not None:
        given, given_from = context, "--context"
    if given is not None and given <= 0:
        raise KvproofInputError("must be a positive integer", given_from)
    advertised, where = _advertised(nodes, given, given_from)
    return Deployment(data.get("name", Path(path).stem), advertised, where, tuple(nodes))
