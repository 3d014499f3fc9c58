"""``conform`` for any variant: the engine is the variant's (``engine = "sglang"`` or
``"vllm"``), the release the flag given for it or the newest its ``[upstream]`` lists.
A flag naming the other engine, or both flags, is bad input (exit 2), raised before any
release is fetched or loaded.
"""

from __future__ import annotations

from pathlib import Path

from kvproof.checker.conform.result import ConformRun
from kvproof.checker.conform.run import Progress
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant


def conform_variant(
    variant: Variant,
    *,
    sglang: str | None = None,
    vllm: str | None = None,
    traces: int = 200,
    seed: int = 0,
    faults: bool = True,
    out: Path | None = None,
    progress: Progress | None = None,
) -> ConformRun:
    if sglang and vllm:
        raise KvproofInputError("give --sglang or --vllm, not both", "--vllm")
    opts = {"traces": traces, "seed": seed, "faults": faults, "out": out, "progress": progress}
    if variant.engine == "vllm":
        if sglang:
            raise KvproofInputError(
                f"{variant.name} is a vLLM variant: pass --vllm VERSION|PATH", "--sglang"
            )
        from kvproof.checker.conform.vllm.run import conform as vllm_conform
        from kvproof.checker.conform.vllm.run import default_release as vllm_release

        return vllm_conform(variant, vllm or vllm_release(variant), **opts)  # type: ignore[arg-type]
    if vllm:
        raise KvproofInputError(
            f"{variant.name} is not a vLLM variant (engine {variant.engine!r})", "--vllm"
        )
    from kvproof.checker.upstream.run import conform, default_release

    return conform(variant, sglang or default_release(variant), **opts)  # type: ignore[arg-type]
