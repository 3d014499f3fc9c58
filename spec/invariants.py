"""The numbered safety invariants of the handoff, by name (prose in ``handoff.md``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import require_known


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


VERDICTS = ("holds", "violated")


def check_expect(table: Mapping[str, Any], names: Collection[str], path: Path) -> dict[str, str]:
    """A variant's ``[expect]`` table: one verdict, holds or violated, for each of ``names``
    (the protocol's invariants), and no other key."""
    for inv, verdict in table.items():
        require_known(inv, tuple(names), "invariant", str(path), shown=f"'expect.{inv}'")
        if verdict not in VERDICTS:
            raise KvproofInputError(
                f"'expect.{inv}' must be 'holds' or 'violated', got {verdict!r}", str(path)
            )
    for inv in names:
        if inv not in table:
            raise KvproofInputError(f"missing key 'expect.{inv}'", str(path))
    return dict(table)
