"""Which variant a release's code is, under the operator's settings: ask the code.

The variants whose ``[upstream]`` tables list the release under settings that agree with
the operator's are the candidates; each is run against the release's own decision code
(``checker/upstream/run.py::conform``, with faults) under the operator's settings over the
release's defaults, as its switches alone (its assumptions dropped: an assumption narrows
the walks, and the question is what the code does, not what it does when the environment
behaves). When no candidate agrees, every other SGLang variant is asked. Among the variants
the code agrees with, the primary states the most assumptions (its verdict is "safe under
X"); one with the same switches and fewer assumptions is the same code in an environment
that breaks one (``same_code``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvproof.ops.advise.release_env import env_names
from kvproof.ops.advise.request import Deployment
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.upstream import Upstream
from kvproof.spec.variant import Variant, list_variants


@dataclass(frozen=True)
class Tried:
    """One variant against the release's code: ``switch`` None when the code agrees."""

    variant: str
    switch: str | None
    walks: int
    listed: bool  # its [upstream] table lists the release under settings like the operator's
    detail: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    engine: str
    version: str
    variant: str | None  # the variant the code is (None: the code agrees with none)
    same_code: tuple[str, ...]  # same switches, fewer assumptions (the environment broke one)
    also: tuple[str, ...]  # other variants the code agrees with (switches conform cannot see)
    tried: tuple[Tried, ...]
    env: dict[str, Any]  # what the code ran under, as the release read it
    env_source: dict[str, str]
    adapter: str
    by_table: bool  # the primary's [upstream] table lists this release under these settings

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "release": self.version,
            "variant": self.variant,
            "same_code": list(self.same_code),
            "also_agrees_with": list(self.also),
            "by_table": self.by_table,
            "env": self.env,
            "adapter": self.adapter,
            "tried": [dataclasses.asdict(t) for t in self.tried],
        }


def _effective(table: Any, given: dict[str, Any], defaults: dict[str, Any], key: str) -> bool:
    """The table's setting for ``key`` equals the operator's (both over the defaults)."""
    mine = given.get(key, defaults.get(key))
    theirs = table.get(key, defaults.get(key))
    return bool(mine == theirs)


def listed(
    variant: Variant, dep: Deployment, keys: tuple[set[str], set[str]], defaults: Any
) -> bool:
    """The variant's ``[upstream]`` table lists ``dep``'s release under its settings."""
    up = variant.upstream
    if up is None or dep.version not in up.releases:
        return False
    env_keys, arg_keys = keys
    env_defaults, arg_defaults = defaults
    return all(_effective(up.env, dep.env, env_defaults, k) for k in env_keys) and all(
        _effective(up.server_args, dep.server_args, arg_defaults, k) for k in arg_keys
    )


def as_operator_runs(variant: Variant, dep: Deployment) -> Variant:
    """The variant's switches alone, run under the operator's settings (not its table's)."""
    upstream = Upstream(
        "sglang", exempt="kvproof advise", env=dict(dep.env), server_args=dict(dep.server_args)
    )
    return dataclasses.replace(variant, assume={}, upstream=upstream)


def _names(variant: Variant, version: str) -> bool:
    """The variant's ``version`` field names this release ("0.34.0 NixlConnector pull")."""
    short = ".".join(version.split(".")[:2])
    return variant.version.startswith(version) or f"-{short}-" in variant.name


def _sides(dep: Deployment, variants: list[Variant]) -> tuple[Any, Any, Any]:
    """(is listed, the variant as the operator runs it or None, conform) for ``dep``'s engine."""
    if dep.engine == "vllm":
        from kvproof.ops.advise import vllm

        return (
            lambda v: vllm.listed(v, dep.version, dep.server_args),
            lambda v: vllm.as_operator_runs(v, dep.server_args),
            lambda v, traces, seed: vllm.conform(v, dep.version, traces, seed),
        )
    from kvproof.checker.upstream import settings
    from kvproof.checker.upstream.run import conform

    assert dep.tree is not None
    env_defaults = {k: e.default for k, e in env_names(dep.tree).items()}
    defaults = (env_defaults, settings.server_arg_defaults(dep.tree))
    keys = (
        {k for v in variants if v.upstream for k in v.upstream.env},
        {k for v in variants if v.upstream for k in v.upstream.server_args},
    )
    return (
        lambda v: listed(v, dep, keys, defaults),
        lambda v: as_operator_runs(v, dep),
        lambda v, traces, seed: conform(v, dep.version, traces=traces, seed=seed, faults=True),
    )


def match(
    dep: Deployment,
    *,
    traces: int = 200,
    seed: int = 0,
    catalog: Sequence[Variant] | None = None,
    on_variant: Callable[[str], None] | None = None,
) -> Match:
    variants = [v for v in (catalog or list_variants()) if v.engine == dep.engine]
    is_listed, operator_runs, conform = _sides(dep, variants)
    tried, runs = [], {}

    def run_all(batch: list[Variant]) -> None:
        for variant in batch:
            mine = operator_runs(variant)
            if mine is None:  # another connector class: nothing to run
                tried.append(Tried(variant.name, "transfer_mode", 0, is_listed(variant)))
                continue
            if on_variant is not None:
                on_variant(variant.name)
            try:
                run = conform(mine, traces, seed)
            except KvproofInputError as exc:  # the settings, not the variant: say which flag
                raise KvproofInputError(exc.message, "--server-arg/--env") from None
            runs[variant.name] = run
            tried.append(Tried(variant.name, run.switch, run.walks, is_listed(variant), run.detail))

    # The tables name the candidates; the code confirms them. Only when no listed variant
    # agrees is every other variant asked (the release under settings no table lists).
    table = [v for v in variants if is_listed(v)]
    run_all(table)
    if not any(v.name in runs and not runs[v.name].diverged for v in table):
        run_all([v for v in variants if v not in table])
    variants = [v for v in variants if v.name in runs]
    agree = [v for v in variants if not runs[v.name].diverged]
    by_table = [v for v in agree if next(t for t in tried if t.variant == v.name).listed]
    pool = by_table or agree
    if not runs:
        return Match(dep.engine, dep.version, None, (), (), tuple(tried), {}, {}, "-", False)
    any_run = next(iter(runs.values()))
    if not pool:
        return Match(dep.engine, dep.version, None, (), (), tuple(tried), any_run.env,
                     any_run.env_source, any_run.adapter, False)  # fmt: skip
    # Ties: the recommended release, then a variant whose version field is this release.
    primary = max(
        pool,
        key=lambda v: (len(v.assume), v.role == "recommended", _names(v, dep.version), v.name),
    )
    same = tuple(v.name for v in pool if v is not primary and v.switches == primary.switches)
    also = tuple(v.name for v in agree if v is not primary and v.name not in same)
    run = runs[primary.name]
    return Match(dep.engine, dep.version, primary.name, same, also, tuple(tried), run.env,
                 run.env_source, run.adapter, bool(by_table))  # fmt: skip
