"""Per prefill/decode pair: the window in both views, the catalog variant that shows what
happens to a prompt in it, and that story in one sentence."""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.ops.audit import catalog
from kvproof.ops.audit.deployment import Deployment
from kvproof.ops.audit.window import Window, solve_pair


@dataclass(frozen=True)
class Danger:
    prefill: str
    decode: str
    engine_name: str  # the prefill node's engine: whose admission rule the engine view uses
    pool: Window | None  # the operator's view: pool vs advertised context
    engine: Window | None  # the engine's exact admission checks (SGLang's -1/-5 margins)
    match: catalog.Match | None
    what_happens: str
    evidence: tuple[str, ...]  # where the pools and contexts of the pair were read

    @property
    def headline(self) -> Window:
        window = self.pool or self.engine
        assert window is not None
        return window


def _story(match: catalog.Match | None, window: Window) -> str:
    span = f"a prompt of {window.lo:,}..{window.hi:,} tokens"
    if match is None:
        return (
            f"{span} is rejected by {window.prefill} and admitted by {window.decode}; "
            "no catalog variant models this engine's admission path"
        )
    if match.leaks:
        return (
            f"{span} is rejected by {window.prefill} but its pending reject is not honoured "
            f"(#30233): prefill writes one placeholder page, reports the transfer done, and "
            f"{window.decode} attends over the rest of its reservation: other tenants' stale KV, "
            f"HTTP 200. `kvproof check {match.variant}` prints the counterexample"
        )
    return (
        f"{span} is retired at the admission queue with HTTP 400 before any allocation or "
        f"transfer ({match.variant}): no leak, but advertised prompts fail"
    )


def dangers(deployment: Deployment) -> list[Danger]:
    found = []
    for p in deployment.with_role("prefill"):
        for d in deployment.with_role("decode"):
            pool = solve_pair(p, d, deployment.advertised_context, "pool")
            engine = solve_pair(p, d, deployment.advertised_context, "engine")
            if pool is None and engine is None:
                continue
            match = catalog.match(p.engine, catalog.lowest_version([p.version, d.version]))
            window = pool or engine
            assert window is not None
            evidence = tuple(
                n.evidence[k]
                for n in (p, d)
                for k in ("pool_tokens", "context_len")
                if k in n.evidence
            )
            found.append(
                Danger(
                    p.name, d.name, p.engine, pool, engine, match, _story(match, window), evidence
                )
            )
    return found
