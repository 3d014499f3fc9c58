"""Environment assumptions as guards: what each one forbids the environment to do.

``spec/assumptions.py`` declares each assumption in prose; here each becomes an extra
guard on the environment actions it constrains (timeouts, failures, lease expiry), added
in front of the action's own body. The protocol itself is unchanged: dropping an
assumption (``kvproof check --without NAME``) gives back the action exactly as written in
``model/handoff/protocol.py``, and with it the counterexample the assumption was hiding.
``of_variant.protocol_of`` is how a caller gets a variant's protocol under them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from typing import Any

from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import Action, Protocol
from kvproof.model.lang.liveness import Fair
from kvproof.spec.assumptions import ASSUMPTIONS, FAIRNESS
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.events import EVENT_NAMES
from kvproof.spec.names import require_assumed
from kvproof.spec.variant import Switches, Variant

# (s, *action args) -> the condition the environment is assumed to respect
Guard = Callable[..., Any]


def _no_inflight(s: Ctx, r: Any) -> Any:
    return s.forall("Page", lambda p: s.not_(s.inflight(r, p)))


def _sender_stopped(s: Ctx, r: Any, sw: Switches, death: bool) -> Any:
    """Prefill will post nothing more for ``r`` (a dead prefill posts nothing)."""
    if sw.transfer_mode == "push":
        stopped = s.not_(s.isin(s.pphase(r), "waiting", "active"))
        return s.or_(stopped, s.p_dead(r)) if death else stopped
    return True  # pull: decode posts its own reads, and not once it gave up


def _transfer_ended(sw: Switches, death: bool) -> Guard:
    return lambda s, r: s.and_(_no_inflight(s, r), _sender_stopped(s, r, sw, death))


def guards(name: str, sw: Switches, death: bool = False) -> dict[str, Guard]:
    """Action name -> the guard assumption ``name`` adds to it (for these switches; with
    ``death``, the protocol has ``crash`` and its ``p_dead``). A fairness assumption adds
    no guard (``fair_of``)."""
    if ASSUMPTIONS.get(name) is not None and ASSUMPTIONS[name].kind == FAIRNESS:
        return {}
    if name == "bounded_transfer":
        return {"timeout": _transfer_ended(sw, death)}
    if name == "stalled_transfer":
        return {"timeout": lambda s, r: s.not_(_no_inflight(s, r))}
    if name == "failed_is_drained":
        return {"fail": lambda s, r: _no_inflight(s, r)}
    if name == "lease_outlives_read":
        # The lease outlives the read: it expires only once decode's reads of the blocks
        # have all landed and decode no longer reads (it committed, aborted or finished).
        return {
            "expire": lambda s, r: s.and_(
                _no_inflight(s, r), s.not_(s.isin(s.dphase(r), "queued", "transfer"))
            )
        }
    if name == "silent_peer_is_stopped":
        return {"give_up": _transfer_ended(sw, death)}
    raise KvproofInputError(
        f"no realisation of assumption {name!r}", "model/handoff/assumptions.py"
    )


def active(variant: Variant, without: Iterable[str] = ()) -> tuple[str, ...]:
    """The variant's assumptions minus ``without`` (each of which it must list)."""
    dropped = tuple(without)
    require_assumed(variant.name, tuple(variant.assume), dropped)
    return tuple(n for n in variant.assume if n not in dropped)


def fair_of(name: str, protocol: Protocol, where: str = "") -> tuple[Fair, ...]:
    """The weak-fairness obligations fairness assumption ``name`` adds to ``protocol``: one
    per event it names that the protocol has (a switch may leave one out, e.g. ``timeout``
    without deferred release); none of them: bad input, naming the variant file's key."""
    info = ASSUMPTIONS[name]
    have = {a.name for a in protocol.actions}
    for event in info.events:
        if event not in EVENT_NAMES and event not in have:
            raise KvproofInputError(
                f"fairness assumption 'assume.{name}' is on unknown event {event!r}", where
            )
    if not any(e in have for e in info.events):
        raise KvproofInputError(
            f"fairness assumption 'assume.{name}' is on events {', '.join(info.events)},"
            f" none of which protocol {protocol.name!r} has",
            where,
        )
    return tuple(Fair(e, name) for e in info.events if e in have)


def apply(protocol: Protocol, names: Collection[str], sw: Switches, where: str = "") -> Protocol:
    """``protocol`` with the guards of every guard assumption in ``names`` and the
    fairness of every fairness assumption (``where``: the variant file, for errors)."""
    death = any(a.name == "crash" for a in protocol.actions)
    added: dict[str, list[Guard]] = {}
    fair: list[Fair] = list(protocol.fair)
    for name in names:
        for action, guard in guards(name, sw, death).items():
            added.setdefault(action, []).append(guard)
        if name in ASSUMPTIONS and ASSUMPTIONS[name].kind == FAIRNESS:
            fair += fair_of(name, protocol, where)
    actions = tuple(_guarded(a, added.get(a.name, [])) for a in protocol.actions)
    return dataclasses.replace(
        protocol, actions=actions, assumptions=tuple(names), fair=tuple(fair)
    )


def _guarded(action: Action, extra: list[Guard]) -> Action:
    if not extra:
        return action
    body = action.body

    def guarded(s: Ctx, *args: Any) -> None:
        for guard in extra:
            s.require(guard(s, *args))
        body(s, *args)

    return dataclasses.replace(action, body=guarded)


def declared(names: Iterable[str]) -> list[dict[str, Any]]:
    """name/text/source of each assumption (the report's vocabulary)."""
    out = []
    for n in names:
        info = ASSUMPTIONS.get(n)
        out.append(
            {"name": n, "text": info.text if info else "", "source": info.source if info else ""}
        )
    return out
