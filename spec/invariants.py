"""The numbered safety invariants of the handoff, by name (prose in ``handoff.md``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InvariantInfo:
    number: int
    name: str
    statement: str


_ALL = (
    InvariantInfo(
        1,
        "isolation",
        "when decode reads a request's KV, every page in its table holds KV written by that"
        " request's own prefill in this allocation, in every slot read, at its position",
    ),
    InvariantInfo(
        2,
        "no_stray_write",
        "a KV write lands only in a page that the writing request owns at that moment",
    ),
    InvariantInfo(
        3,
        "reject_final",
        "a request that either side rejected or aborted never reaches decode and never gets"
        " a success status",
    ),
    InvariantInfo(
        4,
        "one_owner",
        "every decode page has at most one owner (the writer-owner of what a transfer writes);"
        " a page decode's radix cache shares read-only is never written",
    ),
)

INVARIANTS: dict[str, InvariantInfo] = {inv.name: inv for inv in _ALL}
