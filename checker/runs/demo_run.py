"""``kvproof demo incident`` as one library call: ``demo(...)`` returns a ``DemoRun``.

The incident on the reference engine (``refimpl/incident.py``): canaries, a prompt longer
than prefill's pool but within the advertised context, and the output oracle's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.spec.errors import KvproofInputError

EXPECTS = ("variant", "clean")


@dataclass(frozen=True)
class DemoRun:
    report: Any  # kvproof.refimpl.incident's report
    # What the run is held to: the variant's prediction (its ``demo`` key: the incident
    # reproduced on 0.5.19 is the expected outcome, so a healthy install exits 0), or
    # "clean" (``--expect clean``: any leak or wrong answer is a finding, exit 1).
    expected: str = "clean"

    @property
    def outcome(self) -> str:
        """What the clients saw: a leak, a wrong answer, or clean."""
        if self.report.leaks:
            return "leak"
        return "wrong_answer" if self.report.wrong else "clean"

    @property
    def matches(self) -> bool:
        return self.outcome == self.expected

    @property
    def exit_code(self) -> int:
        return 0 if self.matches else 1

    def to_json(self) -> dict[str, Any]:
        from kvproof.checker.render.demo import demo_json

        return {
            **demo_json(self.report),
            "outcome": self.outcome,
            "expected": self.expected,
            "matches_expectation": self.matches,
            "exit_code": self.exit_code,
        }


def demo(
    variant_name: str,
    *,
    own_sizes: bool = False,
    model: str = "echo",
    device: str = "cpu",
    seed: int = 0,
    expect: str = "variant",
) -> DemoRun:
    from kvproof.refimpl.incident import run_incident
    from kvproof.spec.variant import load_variant

    if expect not in EXPECTS:
        raise KvproofInputError(
            f"unknown expectation {expect!r} ({', '.join(EXPECTS)})", "--expect"
        )
    variant = load_variant(variant_name)
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise KvproofInputError(f"unknown device {device!r} (cpu, cuda)", "--device")
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise KvproofInputError("no CUDA device available", "--device")
    # Tiny models: intra-op threads only add wake-up latency (35x on a 2-core box).
    torch.set_num_threads(1)
    report = run_incident(
        variant,
        sizes=variant.engine_sizes if own_sizes else None,
        model=model,
        device=device,
        seed=seed,
    )
    return DemoRun(report, expected=variant.demo if expect == "variant" else "clean")
