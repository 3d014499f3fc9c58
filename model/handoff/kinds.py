"""The handoff's actions with their kinds, which ``spec/events.py`` states once for the
protocol, the engine's log and ``spec/handoff.md`` (there: why each is an engine step or
the environment's fault)."""

from __future__ import annotations

from collections.abc import Callable

from kvproof.model.lang.dsl import Action, ActionKind
from kvproof.spec.events import BY_NAME


def action(name: str, params: tuple[str, ...], body: Callable[..., None], doc: str) -> Action:
    """``Action`` with the kind ``spec/events.py`` gives the event ``name``."""
    return Action(name, params, body, doc, ActionKind(BY_NAME[name].kind))
