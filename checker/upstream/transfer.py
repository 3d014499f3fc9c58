"""Pages per prompt: what decode reserves and what prefill sends, as the release counts them.

``page_counts`` asks the release for the two prompts a walk's requests carry (one that fits
prefill's limit, the incident's over-long one): decode's reservation through
``reserve.reserved_pages`` (``DecodePreallocQueue._pre_alloc``), prefill's page count
through ``intake.intake`` (``finalize_bootstrap`` / ``_num_pages_to_send`` to the sender's
``init``). On 0.5.19 the 40,000-token prompt gets 625 pages reserved and 1 sent (the 1-token
stub); from 0.5.21 it is retired at intake and nothing is sent.

``prompt_pages`` is kvproof's own arithmetic for the same prompts (tokens over the page
size, rounded up): what the model reserves (``checker/conform/model_side.py``), never read
from the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kvproof.checker.upstream.intake import FITS, OVER, PAGE_SIZE, intake
from kvproof.checker.upstream.reserve import reserved_pages


@dataclass(frozen=True)
class PageCounts:
    """One prompt's pages, as the release's code counts them."""

    prompt_tokens: int
    reserved: int  # decode's pre-allocation
    sent: int | None  # prefill's count to its sender (None: nothing, retired at intake)

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "decode_reserved_pages": self.reserved,
            "prefill_sent_pages": self.sent,
        }


def page_counts(mods: dict[str, ModuleType]) -> dict[bool, PageCounts]:
    """Decode's reservation and prefill's page count for both prompts (key: over-long)."""
    out = {}
    for over in (False, True):
        sent = intake(mods, over=over)
        reserved = reserved_pages(mods, sent.prompt_tokens)
        out[over] = PageCounts(sent.prompt_tokens, reserved, sent.sent_pages)
    return out


def prompt_pages(over_prefill: bool) -> int:
    """The prompt's pages by kvproof's arithmetic (the model's reservation)."""
    return -(-(OVER if over_prefill else FITS) // PAGE_SIZE)
