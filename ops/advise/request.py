"""What the operator runs, read once at the edge: ``sglang==0.5.20``, ``--env``,
``--server-arg`` and ``--server-info``, each checked against the release before any work.

A ``/server_info`` document is read by the audit's own parser
(``ops/audit/sglang_server_info.py``): its version, the server args the audit knows and
the environment it lists (only with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``). ``--env`` and
``--server-arg`` win over it; both win over the release's defaults.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvproof.ops.advise.release_env import env_names, typed
from kvproof.spec import releases
from kvproof.spec.errors import KvproofInputError

ENGINES = ("sglang", "vllm")


@dataclass(frozen=True)
class Deployment:
    """A release and the settings the operator gave (typed, over the release's defaults)."""

    engine: str
    version: str
    env: dict[str, Any] = field(default_factory=dict)
    server_args: dict[str, Any] = field(default_factory=dict)
    given: dict[str, str] = field(default_factory=dict)  # name -> where it was given
    tree: Path | None = None  # the release's code (an unpacked wheel)

    @property
    def label(self) -> str:
        return f"{self.engine}=={self.version}"


def parse_target(text: str) -> tuple[str, str]:
    """``sglang==0.5.20`` -> ("sglang", "0.5.20")."""
    engine, sep, version = text.partition("==")
    if not sep or not engine or not version:
        raise KvproofInputError(
            f"expected ENGINE==VERSION (e.g. sglang==0.5.22), got {text!r}", "ENGINE==VERSION"
        )
    engine = engine.strip().lower()
    if engine not in ENGINES:
        raise KvproofInputError(
            f"unknown engine {engine!r} (known: {', '.join(ENGINES)})", "ENGINE==VERSION"
        )
    return engine, version.strip().lstrip("v")


def _pairs(items: Sequence[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise KvproofInputError(f"expected NAME=VALUE, got {item!r}", flag)
        out.append((name.strip(), value))
    return out


def _arg_value(text: str, default: Any) -> Any:
    """A server arg as ``ServerArgs`` holds it: the default's type when it has one."""
    if isinstance(default, bool):
        return text.strip().lower() in ("1", "true", "yes", "on")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, bool | int | float | str) else text


def deployment(
    target: str | None,
    *,
    env: Sequence[str] = (),
    server_args: Sequence[str] = (),
    server_info: Path | None = None,
) -> Deployment:
    """The deployment to advise on; ``KvproofInputError`` for anything malformed or unknown."""
    from kvproof.checker.upstream import fetch, settings

    info_env, info_args, info_given, info_version = _server_info(server_info)
    if target is None and info_version is None:
        raise KvproofInputError(
            "give ENGINE==VERSION (the server_info names no version)", "ENGINE==VERSION"
        )
    engine, version = parse_target(target) if target else ("sglang", str(info_version))
    if info_version is not None and info_version != version:
        raise KvproofInputError(
            f"the server_info says version {info_version}, not {version}", str(server_info)
        )
    env_pairs, arg_pairs = _pairs(env, "--env"), _pairs(server_args, "--server-arg")
    if engine == "vllm":
        from kvproof.ops.advise import vllm

        if server_info is not None:
            raise KvproofInputError("--server-info reads SGLang's /server_info", "--server-info")
        given_args = vllm.settings(arg_pairs, env)
        tree = vllm.tree_of(version)
        return Deployment(
            engine, version, {}, given_args, dict.fromkeys(given_args, "--server-arg"), tree
        )
    known = releases.get("sglang", version)
    if known is None:
        raise KvproofInputError(
            f"unknown SGLang version {version!r} (known: {', '.join(fetch.RELEASES)})",
            "ENGINE==VERSION",
        )
    if known.adapter is None:  # spec/releases.toml says why conform cannot drive it
        raise KvproofInputError(
            f"sglang {version}: conform cannot drive its code ({known.no_adapter}); advise "
            f"answers for {', '.join(fetch.RELEASES)}",
            "ENGINE==VERSION",
        )
    tree, _ = fetch.resolve(version)
    names = env_names(tree)
    typed_env, given = dict(info_env), dict(info_given)
    for name, text in env_pairs:
        if name not in names:
            raise KvproofInputError(f"sglang {version} does not read the env {name}", "--env")
        typed_env[name] = typed(names[name], text, "--env")
        given[name] = "--env"
    defaults = settings.server_arg_defaults(tree)
    typed_args = dict(info_args)
    for name, text in arg_pairs:
        if name not in defaults:
            raise KvproofInputError(f"sglang {version} has no server arg {name}", "--server-arg")
        typed_args[name] = _arg_value(text, defaults[name])
        given[name] = "--server-arg"
    return Deployment(engine, version, typed_env, typed_args, given, tree)


def _server_info(
    path: Path | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], str | None]:
    """(env, server args, where each was read, version) from a ``/server_info`` file."""
    if path is None:
        return {}, {}, {}, None
    from kvproof.ops.audit import sglang_env
    from kvproof.ops.audit.sglang_args import ARGS
    from kvproof.ops.audit.sglang_server_info import parse

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise KvproofInputError(f"cannot read: {exc.strerror}", str(path)) from None
    facts = parse(text, str(path)).facts
    arg_of = {fact: arg for arg, (fact, _) in ARGS.items()}
    env: dict[str, Any] = {}
    args: dict[str, Any] = {}
    given: dict[str, str] = {}
    for fact, found in facts.items():
        if fact in sglang_env.BY_FACT:
            env[sglang_env.BY_FACT[fact].name] = found.value
            given[sglang_env.BY_FACT[fact].name] = found.where
        elif fact in arg_of and not str(found.where).endswith("(absent: off)"):
            args[arg_of[fact]] = found.value
            given[arg_of[fact]] = found.where
    version = facts["version"].value if "version" in facts else None
    return env, args, given, (str(version) if version is not None else None)
