"""The projection compared after each step: what the code decided, next to the model.

Per request (``RequestView``): the decode pages it still holds, whether it was aborted,
whether its transfer was committed; and, where an engine's adapter and the model both
give them, the pages decode reserved, the pages prefill sends and has written, the status
each side holds, prefill's source blocks (who holds them, and whether a read or write of
them was in flight when they were freed), and what prefill's intake did with an over-long
prompt. Per run (``Projection``): stray writes (a write that landed on a page its writer
no longer owned). A field that is ``None`` on either side is not compared: an adapter
fills what its engine's code decides, the model what it models. KV contents are never
compared: the code under test never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# The optional per-request fields, compared only when both sides give a value.
OPTIONAL = (
    "pages_sent_of_reserved",
    "released_after_acks",
    "prompt_tokens",
    "reserved",
    "sent",
    "written",
    "decode_status",
    "prefill_status",
    "source",
    "source_freed_in_flight",
    "intake",
    "admission",
)


@dataclass(frozen=True)
class RequestView:
    pages: frozenset[int]  # decode pages the request holds
    aborted: bool  # the client got an abort or error
    committed: bool  # decode committed the transfer (took the KV as the prompt's)
    # How many of the pages decode reserved prefill sends: "whole", "short" (fewer: the
    # incident's 1 of 625), "none" (retired at intake). Compared at arrival and after.
    pages_sent_of_reserved: str | None = None
    # How many prefill ranks had ACKed when decode released a held request: "all", or
    # "k of n" (a release before every rank's drain ACK).
    released_after_acks: str | None = None
    prompt_tokens: int | None = None  # the prompt's length, where the counts are the code's
    reserved: int | None = None  # pages decode reserved for the prompt
    sent: int | None = None  # pages prefill sends (its page count for the request)
    written: int | None = None  # pages prefill's writes have landed in
    decode_status: str | None = None  # the transfer status decode holds (e.g. "failed")
    prefill_status: str | None = None  # the status prefill's sender holds
    source: frozenset[int] | None = None  # prefill's source blocks the request holds
    source_freed_in_flight: bool | None = None  # a source block freed under a read/write
    # prefill's intake of an over-long prompt: "retired" (no sender, no queue entry),
    # "stub" (queued as set_finish_with_abort's 1-token placeholder) or "queued".
    intake: str | None = None
    # decode's admission of the request (its own input check and admission queue):
    # "retired" (rejected at the door: the client has its 400, nothing held) or "queued"
    # (a receiver registered and a pre-allocation entry). Compared from arrival on.
    admission: str | None = None


@dataclass(frozen=True)
class Projection:
    requests: tuple[RequestView, ...]
    stray: frozenset[int]  # pages a write landed on while its writer did not own them


@dataclass(frozen=True)
class Mismatch:
    request: int  # -1: the run as a whole (stray writes)
    what: str  # a RequestView field, "stray", or "committed" (a Success not taken)
    model: Any
    code: Any

    def line(self) -> str:
        who = "run" if self.request < 0 else f"r{self.request}"
        return f"{who} {self.what}: model {self.model}, code {self.code}"


def compare(model: Projection, code: Projection) -> list[Mismatch]:
    """Every field on which the two projections differ (optional fields: when both give
    one), requests in order, then the stray writes."""
    out: list[Mismatch] = []
    for r, (m, c) in enumerate(zip(model.requests, code.requests, strict=True)):
        for f in fields(RequestView):
            a, b = getattr(m, f.name), getattr(c, f.name)
            if f.name in OPTIONAL and (a is None or b is None):
                continue
            if a != b:
                out.append(Mismatch(r, f.name, _show(a), _counted(f.name, b, c)))
    if model.stray != code.stray:
        out.append(Mismatch(-1, "stray", _show(model.stray), _show(code.stray)))
    return out


def _counted(name: str, value: Any, view: RequestView) -> Any:
    """The code's page relation with its counts: ``short (1 of 625 reserved, 40000-token
    prompt)``."""
    if name != "pages_sent_of_reserved" or view.reserved is None:
        return _show(value)
    sent = "nothing" if view.sent is None else str(view.sent)
    return f"{value} ({sent} of {view.reserved} reserved, {view.prompt_tokens}-token prompt)"


def _show(x: Any) -> Any:
    return sorted(x) if isinstance(x, frozenset) else x
