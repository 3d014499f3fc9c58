"""Fill in what an engine does when a setting was not given, and say so in the evidence.

SGLang's environment variables take their release's defaults (``release.default``, from
``spec/releases.toml``) when the environment was listed without them (``env_exposed``).
Deferred KV release is different: its default changed between releases, so a listed
environment without it is resolved from the version; an environment never exposed leaves
it unknown (None) even where the default is on, since an operator may have switched it
off. The rules decide what unknown costs.

Timeouts without a value get their default, marked "assumed" when the environment was not
exposed: the release-timeout rule compares defaults too, because the defaults are where
the window is (a 30 s release timeout against a 300 s waiting timeout).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvproof.ops.audit import release, sglang_env
from kvproof.ops.audit.facts import Fact


def resolve(engine: str, facts: Mapping[str, Fact]) -> dict[str, Fact]:
    out = dict(facts)
    if engine != "sglang":
        return out
    exposed = "env_exposed" in out
    listing = out["env_exposed"].where if exposed else None
    version = out.get("version")
    shown = str(version.value) if version else None
    for var in sglang_env.VARS:
        if var.fact in out:
            continue
        default = release.default(var.fact, shown)
        if var.fact == "deferred_release":  # version-dependent: only from a listing
            if exposed and default is not None:
                note = f"{var.name} not set (default for v{shown or '?'})"
                out[var.fact] = Fact(default, f"{listing}: {note}")
            continue
        if default is None:  # no release default to assume
            continue
        where = (
            f"{listing}: {var.name} not set (default)"
            if exposed
            else f"{var.name}: default assumed (environment not exposed)"
        )
        out[var.fact] = Fact(default, where)
    return out
