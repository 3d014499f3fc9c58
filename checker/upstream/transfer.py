"""Pages per request: what decode reserves and what prefill sends, the code's counts next to
the model's.

The code's counts come from the release (``reserve.reserved_pages``: decode's
``DecodePreallocQueue._pre_alloc``; ``intake.intake``: prefill's ``finalize_bootstrap``,
then ``chunks.send_chunks``: the pages its sender queues chunk by chunk, the last flagged),
for
the two prompts a walk's requests carry: one that fits prefill's limit and the incident's
over-long one (``over_p``). The harness projects them per request
(``RequestView.pages_sent_of_reserved``, with the counts); the model's side of the relation is
``checker/conform/model_side.py::pages_sent_of_reserved``. The incident's mechanism: on 0.5.19
decode reserves 625 pages for the 40,000-token prompt and prefill sends 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.checker.upstream.chunks import Chunks


@dataclass(frozen=True)
class PageCounts:
    """One prompt's pages, as the release's code counts them."""

    prompt_tokens: int
    reserved: int  # decode's pre-allocation
    sent: int | None  # pages prefill's sender queued (None: nothing, retired at intake)
    chunks: Chunks | None = None  # per chunk: pages and the sender's last-chunk flag

    @property
    def relation(self) -> str:
        if self.sent is None or self.sent == 0:
            return "none"
        if self.chunks is not None and not self.chunks.ended:
            return "unfinished"  # no chunk flagged last: the worker never concludes
        return "whole" if self.sent >= self.reserved else "short"

    def show(self) -> str:
        sent = "nothing" if self.sent is None else f"{self.sent}"
        return f"{sent} of {self.reserved} reserved"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "decode_reserved_pages": self.reserved,
            "prefill_sent_pages": self.sent,
            "relation": self.relation,
        }
        if self.chunks is not None:
            out["chunk_pages"] = list(self.chunks.pages)
            out["chunk_last"] = list(self.chunks.last)
        return out
