"""A campaign folder: which units are done, so a stopped campaign resumes where it was.

``DIR/campaign.json`` holds the settings the units depend on (resuming with others is bad
input); ``DIR/units.jsonl`` gets one line per finished unit, appended and flushed as the
driver receives it. A line cut short by a kill is ignored, and that unit runs again. Units
are pure functions of their arguments, so a resumed campaign merges to the same result as
one that never stopped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


class CampaignLog:
    def __init__(self, folder: Path, settings: dict[str, Any]) -> None:
        self.folder = folder
        self.findings = folder / "findings"
        self.findings.mkdir(parents=True, exist_ok=True)
        head = folder / "campaign.json"
        settings = json.loads(json.dumps(settings))  # tuples -> lists, as read back
        if head.exists():
            try:
                old = json.loads(head.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise KvproofInputError(f"not a campaign file: {exc}", str(head)) from None
            if old != settings:
                diff = sorted(
                    k for k in settings.keys() | old.keys() if settings.get(k) != old.get(k)
                )
                raise KvproofInputError(
                    f"holds a campaign with other settings ({', '.join(diff)})", str(head)
                )
        else:
            head.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        self._units = folder / "units.jsonl"

    def done(self) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        if not self._units.exists():
            return out
        for line in self._units.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line of a killed run
            if isinstance(row, dict) and isinstance(row.get("index"), int):
                out[row["index"]] = row
        return out

    def record(self, index: int, data: dict[str, Any]) -> None:
        line = json.dumps({"index": index, **data}) + "\n"
        if self._units.exists() and self._units.stat().st_size:
            with self._units.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a killed run's half line: start a fresh one
                    line = "\n" + line
        with self._units.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
