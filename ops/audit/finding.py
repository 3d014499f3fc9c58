"""A finding: severity, the numbers, what to do, and the model assumption it rests on.

``variant`` names the catalog variant (``spec/variants``) whose counterexample shows what
the finding costs; ``assumption`` the environment assumption of the fixed model that the
configuration breaks (``bounded_transfer``, ``lease_outlives_read``),
one of those ``spec/assumptions.py`` declares. Either may be None where no variant or
assumption applies (a setting the model has as a switch, e.g. which roles check the
transfer checksum, breaks no assumption). They are names, not imports of the model: the
audit needs neither model nor engine; ``tests/ops/audit/test_audit_names.py`` checks that
every name a rule can emit is declared.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Severity(enum.IntEnum):
    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


@dataclass(frozen=True)
class AuditFinding:
    id: str
    severity: Severity
    title: str
    nodes: tuple[str, ...]
    numbers: Mapping[str, int | float | str | bool | None]
    action: str
    evidence: tuple[str, ...] = field(default=())
    variant: str | None = None
    assumption: str | None = None
