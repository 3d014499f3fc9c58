"""``advise`` as a library call: the deployment -> the variant its code is (conform) -> that
variant's verdicts (check, liveness) -> the change that makes it safe, checked the same way.

Exit codes: 0 safe under the stated assumptions, 1 unsafe (a safety or liveness property is
violated), 2 bad input (raised as ``KvproofInputError`` before any walk).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.ops.advise.assess import Assessment, assess
from kvproof.ops.advise.match import Match, match
from kvproof.ops.advise.meaning import meaning
from kvproof.ops.advise.release_env import env_names
from kvproof.ops.advise.request import Deployment
from kvproof.spec.upstream import version_key
from kvproof.spec.variant import list_variants, load_variant

Stage = Callable[[str], None]


@dataclass(frozen=True)
class Fix:
    """A change to the deployment, and what the code and the model say after it."""

    change: str  # "set SGLANG_...=true", "upgrade to sglang==0.5.21"
    deployment: str  # the changed deployment, as ENGINE==VERSION and settings
    variant: str  # the variant its code is (conform)
    safe: bool  # check and liveness of that variant
    assumptions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"assumptions": list(self.assumptions)}


@dataclass(frozen=True)
class AdviseRun:
    deployment: Deployment
    match: Match
    assessment: Assessment | None  # None: the code agrees with no variant
    meanings: dict[str, str]  # assumption -> what it asks of this deployment
    values: dict[str, Any]  # the settings the assumptions read, and where each came from
    sources: dict[str, str]
    fix: Fix | None
    seconds: float

    @property
    def safe(self) -> bool:
        return self.assessment is not None and self.assessment.safe

    @property
    def exit_code(self) -> int:
        return 0 if self.safe else 1

    def to_json(self) -> dict[str, Any]:
        dep = self.deployment
        return {
            "deployment": {
                "engine": dep.engine,
                "version": dep.version,
                "env": dep.env,
                "server_args": dep.server_args,
                "given": dep.given,
            },
            "match": self.match.to_json(),
            "verdict": "safe" if self.safe else "unsafe",
            "assessment": self.assessment.to_json() if self.assessment else None,
            "meanings": self.meanings,
            "settings": {k: {"value": v, "from": self.sources[k]} for k, v in self.values.items()},
            "fix": self.fix.to_json() if self.fix else None,
            "seconds": round(self.seconds, 2),
            "exit_code": self.exit_code,
        }


def _values(dep: Deployment, m: Match) -> tuple[dict[str, Any], dict[str, str]]:
    assert dep.tree is not None
    if dep.engine == "vllm":
        from kvproof.ops.advise import vllm

        values = {k: dep.server_args.get(k, d) for k, (_, d) in vllm.SETTINGS.items()}
        return values, {k: dep.given.get(k, "release default") for k in values}
    names = env_names(dep.tree)
    keys = [k for k in names if k.startswith("SGLANG_DISAGGREGATION_")]
    values = {k: dep.env.get(k, names[k].default) for k in keys}
    values.update(m.env)  # what the code itself read
    sources = {k: dep.given.get(k, "release default") for k in values}
    return values, sources


def advise(
    dep: Deployment, *, traces: int = 200, seed: int = 0, stage: Stage | None = None
) -> AdviseRun:
    say = stage or (lambda _: None)
    start = time.perf_counter()
    say(f"running {dep.label}'s code against the variants that list it (conform)")
    m = match(dep, traces=traces, seed=seed)
    found = None
    if m.variant is not None:
        say(f"checking {m.variant} (safety, liveness, each assumption)")
        found = assess(m.variant)
    values, sources = _values(dep, m)
    meanings = {
        a.name: meaning(a.name, values, sources, a.text)
        for a in (found.assumptions if found else ())
    }
    fix = None
    if found is None or not found.safe:
        fix = find_fix(dep, traces=traces, seed=seed, say=say)
    secs = time.perf_counter() - start
    return AdviseRun(dep, m, found, meanings, values, sources, fix, secs)


def _label(dep: Deployment) -> str:
    given = [f"--env {k}={text_of(v)}" for k, v in dep.env.items()] + [
        f"--server-arg {k}={text_of(v)}" for k, v in dep.server_args.items()
    ]
    return " ".join([dep.label, *given])


def _try(dep: Deployment, change: str, traces: int, seed: int, say: Stage) -> Fix | None:
    say(f"checking the fix: {change}")
    m = match(dep, traces=traces, seed=seed)
    if m.variant is None:
        return None
    found = assess(m.variant)
    names = tuple(a.name for a in found.assumptions)
    return Fix(change, _label(dep), m.variant, found.safe, names)


def find_fix(dep: Deployment, *, traces: int, seed: int, say: Stage) -> Fix | None:
    """The nearest safe deployment: other settings on the same release (a safe variant's
    ``[upstream]`` table lists it), else the oldest newer release (with the operator's
    settings, then with the release's defaults). Each is matched and checked, not assumed."""
    if dep.engine == "vllm":
        return _vllm_fix(dep, traces=traces, seed=seed, say=say)
    from kvproof.checker.upstream import fetch

    keys = {k for v in list_variants() if v.upstream for k in v.upstream.env}
    for variant in sorted(list_variants(), key=lambda v: v.role != "recommended"):
        up = variant.upstream
        if variant.engine != "sglang" or variant.buggy or up is None:
            continue
        if dep.version not in up.releases:
            continue
        env = {k: v for k, v in dep.env.items() if k not in keys} | dict(up.env)
        changed = [f"set {k}={text_of(v)}" for k, v in up.env.items() if dep.env.get(k) != v]
        changed += [f"unset {k}" for k in dep.env if k in keys and k not in up.env]
        if not changed:
            continue
        fix = _try(dataclasses.replace(dep, env=env), " and ".join(changed), traces, seed, say)
        if fix is not None and fix.safe:
            return fix
    newer = [r for r in fetch.RELEASES if version_key(r) > version_key(dep.version)]
    for release in newer:
        tree, _ = fetch.resolve(release)
        names = env_names(tree)
        env = {k: v for k, v in dep.env.items() if k in names}
        for kept, note in ((env, ""), ({}, " with the release's default settings")):
            moved = dataclasses.replace(dep, version=release, env=kept, tree=tree)
            fix = _try(moved, f"upgrade to sglang=={release}{note}", traces, seed, say)
            if fix is not None and fix.safe:
                return fix
            if not env:
                break
    return None


def _vllm_fix(dep: Deployment, *, traces: int, seed: int, say: Stage) -> Fix | None:
    """Other kv-transfer settings on the same release (no newer vLLM release is known)."""
    from kvproof.ops.advise import vllm

    for variant in list_variants():
        up = variant.upstream
        if variant.engine != "vllm" or variant.buggy or up is None:
            continue
        if dep.version not in up.releases:
            continue
        given = {k: vllm.effective(up, k) for k in vllm.SETTINGS}
        changed = [f"set {k}={v}" for k, v in given.items() if vllm.effective(None, k) != v
                   and dep.server_args.get(k, vllm.effective(None, k)) != v]  # fmt: skip
        if not changed:
            continue
        moved = dataclasses.replace(dep, server_args=given)
        fix = _try(moved, " and ".join(changed), traces, seed, say)
        if fix is not None and fix.safe:
            return fix
    return None


def text_of(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def variant_summary(name: str) -> str:
    return load_variant(name).summary
