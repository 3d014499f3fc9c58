"""``kvproof validate`` as one library call: ``validate(...)`` returns a ``ValidateRun``.

An engine's event log (``checker/conformance/validate.py``) against the model: the first
event the model does not enable, and invariants every consistent model state violates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class ValidateRun:
    log: str  # the log's path, as given
    report: Any  # kvproof.checker.conformance.validate's report

    @property
    def exit_code(self) -> int:
        return int(self.report.exit_code)

    def to_json(self) -> dict[str, Any]:
        from kvproof.checker.render.validate import validate_json

        return validate_json(self.report)


def validate(log: str, variant_name: str | None = None) -> ValidateRun:
    """Validate the log at ``log`` against ``variant_name`` (default: the log's header)."""
    from kvproof.checker.conformance.validate import read_event_log, validate_log
    from kvproof.spec.variant import load_variant

    events = read_event_log(Path(log))
    name = variant_name or events.variant
    if not name:
        raise KvproofInputError("the log names no variant: pass --variant", log)
    return ValidateRun(log, validate_log(events, load_variant(name)))
