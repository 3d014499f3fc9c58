"""The router's side: what a client sent and what it got back.

The router sends the same request to one prefill and one decode node; each validates it
independently (that independence is what opens the danger window). The client's response
is one of 200 / 400 (rejected) / 500 (transfer or check failed) / ``"aborted"``.
"""

from __future__ import annotations

from dataclasses import dataclass

# The protocol's response names (spec/handoff.md) and what the client sees.
HTTP_STATUS: dict[str, int | str | None] = {
    "none": None,
    "ok": 200,
    "rejected": 400,
    "error": 500,
    "aborted": "aborted",
}


@dataclass
class Request:
    rid: int
    tenant: str
    prompt: tuple[int, ...]
    max_new_tokens: int
    arrived: bool = False
    over_p: bool = False
    over_d: bool = False
    poll: str = "none"  # KVPoll as decode sees it: none | transferring | success | failed
    resp: str = "none"  # none | ok | rejected | error | aborted
    reason: str = ""  # why, for people (error message of a 400/500, guard trip, ...)
    abort_msg: bool = False  # decode sent ABORT to prefill
    guard_trips: int = 0
    hit: bool = False  # decode's prefix cache held the prompt's head (issue 12 item 3)


@dataclass(frozen=True)
class Response:
    status: int | str | None  # 200 / 400 / 500 / "aborted"; None while pending
    tokens: tuple[int, ...]
    text: str
    tenant: str
    reason: str = ""
