"""Which catalog variant shows what a deployment's window does, and which one fixes it.

The candidates are the plain PD releases of the deployment's engine in ``spec/variants``
(``sglang-0.5.19-pd``, ``sglang-0.5.22-pd``): the newest one not newer than the nodes'
version models them, except that from v0.5.21 (#38935's intake retire) the admission window
is the fixed release's. An unknown version is taken as the oldest (the audit cannot prove the
fix is there). vLLM has no release-named variant for an admission window: its prefill
answers the error before decode reads anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kvproof.ops.audit import release
from kvproof.ops.audit.release import parse_version
from kvproof.spec.variant import list_variants, load_variant

FIXED_SGLANG = (0, 5, 22)  # v0.5.22: the release the incident report recommends
# #38935 (pending rejects retired at the disaggregation queue): spec/releases.toml's
# ``intake_retires_over_long`` (sglang/srt/disaggregation/prefill.py PrefillBootstrapQueue.add
# calls is_unadmitted_reject), in the wheels from v0.5.21; v0.5.20 still queues the 1-token
# stub, like v0.5.19 (press reports said "v0.5.20": docs/upstream.md#sglang-release-code).
# From there the admission window behaves like the fixed release.
ADMISSION_FIX = {"sglang": release.since("intake_retires_over_long", True)}


@dataclass(frozen=True)
class Match:
    variant: str  # the catalog variant that behaves like these nodes
    fixed: str | None  # the catalog variant with the fix
    leaks: bool  # the matched variant violates isolation (a counterexample exists)
    assumed: bool  # version unknown: the oldest release was assumed


def _releases(engine: str) -> list[tuple[tuple[int, int, int], str]]:
    found = []
    for variant in list_variants():
        m = re.fullmatch(rf"{re.escape(engine)}-(\d+\.\d+\.\d+)-pd", variant.name)
        version = parse_version(m.group(1)) if m else None
        if version is not None:
            found.append((version, variant.name))
    return sorted(found)


def match(engine: str, version: str | None) -> Match | None:
    releases = _releases(engine)
    if not releases:
        return None
    parsed = parse_version(version)
    fixed = next((n for _, n in releases if not load_variant(n).buggy), None)
    floor = ADMISSION_FIX.get(engine)
    if parsed is not None and floor is not None and parsed >= floor and fixed is not None:
        name = fixed
    else:
        older = [name for v, name in releases if parsed is not None and v <= parsed]
        name = older[-1] if older else releases[0][1]
    variant = load_variant(name)
    return Match(
        variant=name,
        fixed=fixed if fixed != name else None,
        leaks=variant.expect.get("isolation") == "violated",
        assumed=parsed is None,
    )


def lowest_version(versions: list[str | None]) -> str | None:
    """The oldest of the nodes' versions; None if any is unknown."""
    parsed = [(parse_version(v), v) for v in versions]
    if any(p is None for p, _ in parsed):
        return None
    return min(parsed)[1]
