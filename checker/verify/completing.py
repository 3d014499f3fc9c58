"""When ``check`` runs the complete search (``model/search/complete.py``), and what it says after.

Three reasons: the user asked (``--complete``), the variant asks (``complete = true`` in its
TOML, so ``check --all`` settles it at every depth), or the check would otherwise end on
"unknown": BMC found nothing to its depth and the unbounded proof failed (issue #14 item 3).
In that last case the search runs within a budget at the check's size; when the budget runs
out, the result carries the exact command (and a larger budget) that would decide it, so no
``check`` ends on "unknown" without saying what would settle it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the search (Houdini, numpy) is imported only when a check runs it
    from kvproof.model.search.complete import CompleteResult

FALLBACK_BUDGET_S = 30.0  # the fallback's own budget when --budget is not given


@dataclass(frozen=True)
class CompleteRun:
    reason: str  # "requested" | "variant" | "fallback"
    result: CompleteResult
    command: str | None = None  # what would decide an "unknown", with its budget

    def to_json(self) -> dict[str, Any]:
        out = self.result.to_json()
        out["reason"] = self.reason
        if self.command is not None:
            out["settle"] = self.command
        return out

    @property
    def summary(self) -> str:
        if self.command is None:
            return self.result.summary
        return f"{self.result.summary}; to decide it run: {self.command}"


def run_complete(
    check: Any,
    sizes: dict[str, int],
    reason: str,
    *,
    budget_s: float,
    protocol_spec: str | None = None,
) -> CompleteRun:
    """The complete search for ``check`` at ``sizes``; an unknown names its settling command."""
    from kvproof.model.search.complete import check_complete

    done = check_complete(
        check.protocol, sizes, budget_s=budget_s, variant=check.variant.name, proved=check.proof
    )
    command = None
    if done.verdict == "unknown":
        command = settle_command(check.variant.name, sizes, budget_s * 4, protocol_spec)
    return CompleteRun(reason, done, command)


def settle_command(
    variant: str, sizes: dict[str, int], budget_s: float, protocol_spec: str | None
) -> str:
    words = ["kvproof", "check", variant]
    if protocol_spec:
        words += ["--protocol", protocol_spec]
    words += [
        "--complete",
        "--requests",
        str(sizes["Req"]),
        "--pages",
        str(sizes["Page"]),
        "--budget",
        f"{budget_s:g}",
    ]
    return " ".join(shlex.quote(w) for w in words)
