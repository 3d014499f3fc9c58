"""Environment assumptions as guards: what each one forbids the environment to do.

``spec/assumptions.py`` declares each assumption in prose; here each becomes an extra
guard on the environment actions it constrains (timeouts, failures, lease expiry), added
in front of the action's own body. The protocol itself is unchanged: dropping an
assumption (``kvproof check --without NAME``) gives back the action exactly as written in
``model/handoff/protocol.py``, and with it the counterexample the assumption was hiding.

    protocol = handoff_for(load_variant("sglang-0.5.22-pd"))  # under bounded_transfer
    protocol = handoff_for(variant, without=("bounded_transfer",))  # the 30 s stall leaks
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from typing import Any

from kvproof.model.lang.dsl import Action, Protocol
from kvproof.spec.assumptions import ASSUMPTIONS
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.names import did_you_mean
from kvproof.spec.variant import Switches, Variant

# (s, *action args) -> the condition the environment is assumed to respect
Guard = Callable[..., Any]


def _no_inflight(s: Any, r: Any) -> Any:
    return s.forall("Page", lambda p: s.not_(s.inflight(r, p)))


def _sender_stopped(s: Any, r: Any, sw: Switches) -> Any:
    """Prefill will post nothing more for ``r``."""
    if sw.transfer_mode == "push":
        return s.not_(s.isin(s.pphase(r), "waiting", "active"))
    return True  # pull: decode posts its own reads, and not once it gave up


def _transfer_ended(sw: Switches) -> Guard:
    return lambda s, r: s.and_(_no_inflight(s, r), _sender_stopped(s, r, sw))


def guards(name: str, sw: Switches) -> dict[str, Guard]:
    """Action name -> the guard assumption ``name`` adds to it (for these switches)."""
    if name == "bounded_transfer":
        return {"timeout": _transfer_ended(sw)}
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
        return {"give_up": _transfer_ended(sw)}
    raise KvproofInputError(
        f"no realisation of assumption {name!r}", "model/handoff/assumptions.py"
    )


def active(variant: Variant, without: Iterable[str] = ()) -> tuple[str, ...]:
    """The variant's assumptions minus ``without`` (each of which it must list)."""
    dropped = tuple(without)
    for name in dropped:
        if name not in variant.assume:
            listed = ", ".join(variant.assume) or "none"
            raise KvproofInputError(
                f"{variant.name} does not assume {name!r}{did_you_mean(name, variant.assume)} "
                f"(it assumes: {listed})",
                "--without",
            )
    return tuple(n for n in variant.assume if n not in dropped)


def apply(protocol: Protocol, names: Collection[str], sw: Switches) -> Protocol:
    """``protocol`` with the guards of every assumption in ``names``."""
    added: dict[str, list[Guard]] = {}
    for name in names:
        for action, guard in guards(name, sw).items():
            added.setdefault(action, []).append(guard)
    actions = tuple(_guarded(a, added.get(a.name, [])) for a in protocol.actions)
    return dataclasses.replace(protocol, actions=actions, assumptions=tuple(names))


def _guarded(action: Action, extra: list[Guard]) -> Action:
    if not extra:
        return action
    body = action.body

    def guarded(s: Any, *args: Any) -> None:
        for guard in extra:
            s.require(guard(s, *args))
        body(s, *args)

    return dataclasses.replace(action, body=guarded)


def handoff_for(variant: Variant, without: Iterable[str] = ()) -> Protocol:
    """kvproof's handoff as ``variant`` configures it, under its assumptions (less
    ``without``), with the strengthening for that environment."""
    from kvproof.model.handoff import build_handoff
    from kvproof.model.handoff.strengthening import strengthening

    names = active(variant, without)
    sw = variant.switches
    protocol = apply(build_handoff(sw), names, sw)
    return dataclasses.replace(protocol, strengthening=strengthening(sw, frozenset(names)))


def declared(names: Iterable[str]) -> list[dict[str, str]]:
    """name/text/source of each assumption (the report's vocabulary)."""
    out = []
    for n in names:
        info = ASSUMPTIONS.get(n)
        out.append(
            {"name": n, "text": info.text if info else "", "source": info.source if info else ""}
        )
    return out
