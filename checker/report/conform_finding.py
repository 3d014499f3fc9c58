"""The head line of a ``kvproof conform`` divergence trace: where the engine's code left the
model, and which switch it contradicts.

A conform trace (``checker/conform/trace_out.py``) is a model walk that both sides took up
to the step where they disagree; its header's ``meta`` says what the code did there. Without
this line the page would draw a plain trace and hide the finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

FINDINGS = ("divergence", "upstream_exception")


def conform_finding(meta: Mapping[str, Any], steps: int) -> str:
    """The verdict paragraph for a conform trace's ``meta`` (``""`` for any other trace);
    ``steps``: the trace's length, the step after which the two sides disagree."""
    if meta.get("finding") not in FINDINGS or not meta.get("diagnosis"):
        return ""
    stalls = [int(s) for s in meta.get("stalls_after_step") or ()]
    # The walk's time jumps (past the code's lease deadline) are no model step: say where.
    waited = f"; time passed past the code's deadline after step {stalls[-1]}" if stalls else ""
    beats = sorted({int(s) for s in meta.get("beats_after_step") or ()})
    if beats:  # time passing with heartbeats delivered: no fault, but the clock moved
        at = ("step " if len(beats) == 1 else "steps ") + ", ".join(map(str, beats))
        waited += f"; time passed with heartbeats delivered after {at}"
    where = f" after step {steps}" if steps else ""
    out = (
        f'<p class="verdict">⚠ DIVERGES{where}{escape(waited)} ({escape(str(meta["source"]))})'
        f": {escape(str(meta['diagnosis']))}</p>"
    )
    if meta.get("detail"):
        out += (
            f'<p class="why"><strong>Seen:</strong> <code>{escape(str(meta["detail"]))}</code></p>'
        )
    if meta.get("raised"):
        out += f'<p class="why"><strong>The code raised:</strong> {escape(str(meta["raised"]))}</p>'
    return out
