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


def demo_json(report: Any) -> dict[str, Any]:
    """The incident's ``--json`` object: sizes, limits, every response and its oracle verdict."""

    def finding(f: Any) -> dict[str, Any] | None:
        if f is None:
            return None
        return {
            "leak": f.leak,
            "wrong": f.wrong,
            "foreign_canaries": list(f.foreign_canaries),
            "tokens_match_single_node": f.tokens_match,
            "stale_pages": [
                {
                    "index": s.index,
                    "page": s.page,
                    "writer_rid": s.writer,
                    "writer_tenant": s.writer_tenant,
                    "filled": s.filled,
                    "valid_slots": s.valid,
                    "read_slots": s.read,
                }
                for s in f.stale_pages
            ],
        }

    return {
        "variant": report.variant,
        "deployment_from": report.deployment_from,
        "sizes": vars(report.sizes),
        "prefill_max_input": report.prefill_max_input,
        "decode_max_input": report.decode_max_input,
        "danger_window": list(report.danger_window) if report.danger_window else None,
        "responses": [
            {
                "rid": r.rid,
                "tenant": r.tenant,
                "prompt_tokens": r.prompt_tokens,
                "status": r.status,
                "text": r.text,
                "reason": r.reason,
                "oracle": finding(r.finding),
            }
            for r in report.rows
        ],
        "leak": bool(report.leaks),
        "wrong_answers": len(report.wrong) - len(report.leaks),
    }
