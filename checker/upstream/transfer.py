"""Pages per request: what decode reserves and what prefill sends, the code's counts next to
the model's.

The code's counts come from the release (``reserve.reserved_pages``: decode's
``DecodePreallocQueue._pre_alloc``; ``intake.intake``: prefill's ``finalize_bootstrap``), for
the two prompts a walk's requests carry: one that fits prefill's limit and the incident's
over-long one (``over_p``). The model says how the two counts relate, from its switches
(``model/handoff/protocol.py``: ``placeholder``, ``short``): a request both sides admit gets
its whole reservation written; a placeholder (``placeholder_prompt`` without
``honor_pending_reject``) gets one page of it; ``decode_reserve = "plus_one"`` one page fewer
than reserved; a request retired at intake gets nothing sent. The incident's mechanism is the
second: on 0.5.19 decode reserves 625 pages for the 40,000-token prompt and prefill sends 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.model.lang.concrete import Concrete, State


@dataclass(frozen=True)
class PageCounts:
    """One prompt's pages, as the release's code counts them."""

    prompt_tokens: int
    reserved: int  # decode's pre-allocation
    sent: int | None  # prefill's count to its sender (None: nothing, retired at intake)

    @property
    def relation(self) -> str:
        if self.sent is None or self.sent == 0:
            return "none"
        return "whole" if self.sent >= self.reserved else "short"

    def show(self) -> str:
        sent = "nothing" if self.sent is None else f"{self.sent}"
        return f"{sent} of {self.reserved} reserved"

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "decode_reserved_pages": self.reserved,
            "prefill_sent_pages": self.sent,
            "relation": self.relation,
        }


def model_relation(concrete: Concrete, state: State, r: int) -> str:
    """How many of r's reserved pages prefill sends, by the model, just after ``arrive``."""
    sw = concrete.protocol.switches
    if concrete.value(state, "resp", (r,)) == "rejected":
        return "none"
    over_p = bool(concrete.value(state, "over_p", (r,)))
    if over_p and sw.placeholder_prompt and not sw.honor_pending_reject:
        return "short"  # the 1-token stub: one page of the reservation
    if getattr(sw, "decode_reserve", "own_prompt") == "plus_one":
        return "short"
    return "whole"


def pages_mismatch(
    concrete: Concrete, state: State, r: int, counts: dict[bool, PageCounts]
) -> tuple[str, str] | None:
    """After ``arrive(r)`` of a request decode admits: (model, code) when the relation of
    pages sent to pages reserved differs, else None."""
    if concrete.value(state, "over_d", (r,)):
        return None  # decode's own reject: no reservation on either side
    code = counts[bool(concrete.value(state, "over_p", (r,)))]
    model = model_relation(concrete, state, r)
    if model == code.relation:
        return None
    return model, f"{code.relation} ({code.show()}, {code.prompt_tokens}-token prompt)"


def switch_for_pages(model: str, code: str, over_p: bool) -> str:
    """The switch a page-count disagreement contradicts: a prompt that fits is
    ``decode_reserve``; an over-long one retired on one side only is
    ``honor_pending_reject``, else ``placeholder_prompt``."""
    if not over_p:
        return "decode_reserve"
    return "honor_pending_reject" if "none" in (model, code.split()[0]) else "placeholder_prompt"
