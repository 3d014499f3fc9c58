"""The event vocabulary of the engine's log: exactly the actions of ``spec/handoff.md``."""

from __future__ import annotations

from dataclasses import dataclass

# E1..E19 of spec/handoff.md, in table order.
EVENT_NAMES: tuple[str, ...] = (
    "arrive",
    "alloc",
    "send",
    "post",
    "land",
    "p_abort",
    "done",
    "fail",
    "commit",
    "step",
    "finish",
    "abort",
    "abort_seen",
    "ack",
    "timeout",
    "expire",
    "give_up",
    "insert",
    "share",
)
PAGE_EVENTS = frozenset({"alloc", "post", "land", "insert", "share"})


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
