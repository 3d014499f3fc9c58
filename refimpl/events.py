"""The event vocabulary of the engine's log: exactly the events of ``spec/events.py``."""

from __future__ import annotations

from dataclasses import dataclass

# The one list lives in spec/events.py (with each event's kind and meaning).
from kvproof.spec.events import EVENT_NAMES, PAGE_EVENTS

__all__ = ["EVENT_NAMES", "PAGE_EVENTS", "Event"]


@dataclass(frozen=True)
class Event:
    """One engine step: an action name, its request and (for page events) a decode page."""

    name: str
    rid: int
    page: int | None = None

    def __post_init__(self) -> None:
        if self.name not in EVENT_NAMES:
            raise ValueError(f"unknown event {self.name!r} (known: {', '.join(EVENT_NAMES)})")
        if (self.page is None) == (self.name in PAGE_EVENTS):
            raise ValueError(
                f"event {self.name!r} {'needs' if self.page is None else 'takes no'} page"
            )

    def __str__(self) -> str:
        # The one display of requests and pages, as the model's traces print them (r0, p0).
        return (
            f"{self.name}(r{self.rid})"
            if self.page is None
            else f"{self.name}(r{self.rid}, p{self.page})"
        )
