"""The handoff's liveness properties, its state-dependent engine rules, and peer death.

Three properties (issue #29), each *always trigger -> eventually goal*:

- ``answered(r)``: a request that arrived eventually gets a response (``resp`` set: 200,
  a 4xx/5xx, or aborted);
- ``pages_return(r, p)``: a decode page of a request decode has ended (``draining`` or
  ``done``) eventually leaves its table, back to the free pool (or, with the radix
  cache, to the tree, which evicts it);
- ``no_starvation(r)``: a request admitted to decode's queue is eventually scheduled (it
  sends its page indices, or is aborted).

Liveness needs a peer that can die: without ``crash`` every prefill step is an engine step,
hence fair, and no request could wait forever on a silent prefill (the quarantine's
price, and vLLM #46283's leak, "when prefill never reports"). ``crash`` is
``rules/crash.py``; ``DEATH_VARS`` its variable.
"""

from __future__ import annotations

from kvproof.model.lang.dsl import BOOL, Var
from kvproof.model.lang.liveness import Fair, Liveness

DEATH_VARS = (Var("p_dead", ("Req",), BOOL, doc="the prefill serving the request died (crash)"),)


def handoff_liveness() -> tuple[Liveness, ...]:
    return (
        Liveness(
            "answered",
            ("Req",),
            lambda s, r: s.ne(s.dphase(r), "idle"),
            lambda s, r: s.ne(s.resp(r), "none"),
            "every request that arrived eventually gets a response",
        ),
        Liveness(
            "pages_return",
            ("Req", "Page"),
            lambda s, r, p: s.and_(s.owns(r, p), s.isin(s.dphase(r), "draining", "done")),
            lambda s, r, p: s.not_(s.owns(r, p)),
            "every decode page of an ended request eventually returns to the free pool",
        ),
        Liveness(
            "no_starvation",
            ("Req",),
            lambda s, r: s.eq(s.dphase(r), "queued"),
            lambda s, r: s.ne(s.dphase(r), "queued"),
            "every request admitted to decode's queue is eventually scheduled",
        ),
    )


def engine_rules() -> tuple[Fair, ...]:
    """Faults that are the engine's own step in some states (weakly fair there)."""
    return (
        # spec/events.py: decode's own answer to a Failed poll is no new fault (the engine
        # aborts the request, the rule of conformance's drain in replay.py): fair while the
        # poll says Failed.
        Fair(
            "abort",
            "decode aborts a request whose transfer it polled Failed",
            lambda s, r: s.and_(s.eq(s.dphase(r), "transfer"), s.eq(s.poll(r), "failed")),
        ),
    )
