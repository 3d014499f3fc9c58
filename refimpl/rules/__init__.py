"""The engine's handoff, one rule per event of ``spec/events.py``, in that order.

Each file holds one event or a small family, named as the model's rules in
``model/handoff/rules/``: the two can be read side by side. No rule imports the
driver (``refimpl/handoff.py``); each sees a ``Context`` (``rules/context.py``) and the
request's ``Flight`` (``refimpl/flight.py``).
"""

from __future__ import annotations

from kvproof.refimpl.rules.abort import ABORT, ABORT_SEEN, P_ABORT
from kvproof.refimpl.rules.arrive import ARRIVE
from kvproof.refimpl.rules.conclude import DONE, FAIL
from kvproof.refimpl.rules.context import Context, Rule
from kvproof.refimpl.rules.crash import CRASH
from kvproof.refimpl.rules.expire import EXPIRE
from kvproof.refimpl.rules.generate import COMMIT, FINISH, STEP
from kvproof.refimpl.rules.radix import INSERT, SHARE
from kvproof.refimpl.rules.release import ACK, GIVE_UP, TIMEOUT
from kvproof.refimpl.rules.reserve import ALLOC, SEND
from kvproof.refimpl.rules.stale_ack import STALE_ACK
from kvproof.refimpl.rules.write import LAND, POST

__all__ = ["RULES", "Context", "Rule"]

# E1..E21 (spec/events.py's order; tests/refimpl/test_rules_independent.py holds it).
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        ARRIVE,
        ALLOC,
        SEND,
        POST,
        LAND,
        P_ABORT,
        DONE,
        FAIL,
        COMMIT,
        STEP,
        FINISH,
        ABORT,
        ABORT_SEEN,
        ACK,
        TIMEOUT,
        EXPIRE,
        GIVE_UP,
        INSERT,
        SHARE,
        CRASH,
        STALE_ACK,
    )
}
