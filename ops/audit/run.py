"""``kvproof audit`` as one library call: ``audit_deployment(...)`` returns an ``AuditRun``.

The audit itself is ``report.py`` (an operator runs it without torch or the model); the
run adds what the command decides on top of the report: the ``--fail-on``
threshold, and with it the exit code and the ``kvproof.audit/1`` document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvproof.ops.audit.deployment import parse_role
from kvproof.ops.audit.finding import Severity
from kvproof.ops.audit.report import AuditReport, audit


@dataclass(frozen=True)
class AuditRun:
    report: AuditReport
    fail_on: Severity | None  # None: never fail on a finding

    @property
    def exit_code(self) -> int:
        return self.report.exit_code(self.fail_on)

    def to_json(self) -> dict[str, Any]:
        return self.report.to_dict(self.fail_on)


def audit_deployment(
    paths: Sequence[str],
    roles: Sequence[str] = (),
    *,
    context: int | None = None,
    fail_on: str = "low",
) -> AuditRun:
    """Audit ``paths`` (node files, or one deployment TOML); ``roles`` are ``--role``'s
    ``NODE=ROLE`` strings, ``fail_on`` a severity's name or ``never`` (no severity:
    the run never fails on a finding)."""
    report = audit(paths, roles=dict(parse_role(r) for r in roles), context=context)
    return AuditRun(report, None if fail_on == "never" else Severity.parse(fail_on))
