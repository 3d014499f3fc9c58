"""``crash(r)`` (E20): the prefill serving ``r`` dies while it still has work for ``r``.

Liveness only (``check --liveness``, issue #29): the model's liveness build has this fault
(``model/handoff/liveness.py``), and its lassos are replayed on the engine with it. The
enumeration of enabled events (``refimpl/enabled.py``) never offers it, so no walk, fuzz
campaign or server run performs it. After it, prefill posts, concludes with Success,
processes ABORTs and ACKs nothing more for ``r`` (the guards of those rules); writes
already posted may still land, and a transfer engine's failure report still comes.
"""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_crash(ctx: Context, f: Flight, ev: Event) -> bool:
    return not f.p.dead and f.p.phase in ("waiting", "active")


def do_crash(ctx: Context, f: Flight, ev: Event) -> None:
    f.p.dead = True


CRASH = Rule("crash", can_crash, do_crash)
