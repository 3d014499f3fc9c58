"""One fuzz walk: a random run of model and engine in lockstep, and its trimming.

A walk draws each request's admission verdicts (``over_p``, ``over_d``) and decode
reservation, then a list of choices; at each step the next event is picked among those the
engine can perform now (each of which the model must also enable: ``Lockstep`` checks it).
With ``faults`` the environment's events join in (see ``fuzz.py``).

A finding says what the engine showed, in replay's words (``verdict.py``): when an
invariant breaks (on the engine's state or the model's), the engine drains to every
client's answer as replay does (``replay.drain_to_answers``), and the kind is **leak**
only when a response carries another tenant's canary, **wrong_answer** when a 200's tokens
differ from the single node's, else **violation** (the state shows it, no response does).
The other kinds are **divergence** (engine and model disagree) and **crash** (the engine
raised).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.checker.conformance.lockstep import Divergence, EngineFactory, Lockstep, ModelSide
from kvproof.checker.conformance.model_first import shrink_steps
from kvproof.checker.conformance.replay import drain_to_answers
from kvproof.checker.conformance.verdict import (
    LEAK,
    NOTHING,
    WRONG_ANSWER,
    canary_leaks,
    shown,
    wrong_answers,
)
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import Trace
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import EVENT_NAMES
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.oracle import Answer, Reference
from kvproof.spec.variant import Variant

# Candidate order: progress first (choice 0, what shrinking tends to, moves the run on).
ORDER: dict[str, float] = {name: i for i, name in enumerate(EVENT_NAMES)}
# Decode's radix cache (issue 12 item 4): a request's pages go into the tree as it finishes
# (SGLang's cache_finished_req), so progress offers ``insert`` just before ``finish``.
ORDER["insert"] = ORDER["finish"] - 0.5
SIZES = {"Req": 2, "Page": 3}
MAX_STEPS = 40
MAX_NEW_TOKENS = 4  # decode steps a walk takes per request (more only lengthen walks)
# What each client is answered up to once a walk has found something (replay's default):
# a whole canary (15 tokens) fits, so a foreign one can show in the response.
ANSWER_TOKENS = 32
# What clients saw, strongest first (a finding's kind after the drain).
SHOWN = ("leak", "wrong_answer", "violation")
FAULT_ODDS = 4  # one choice in four injects a fault, when one is possible


@dataclass(frozen=True)
class Walk:
    over_p: tuple[bool, ...]
    over_d: tuple[bool, ...]
    reserve: tuple[int, ...]
    length: int  # steps to take (the run stops earlier at quiescence or a finding)
    choices: tuple[int, ...]  # which candidate at each step (past the end: 0)
    hit: tuple[bool, ...] = ()  # decode's prefix cache holds the head (issue 12 item 3)


@dataclass
class WalkResult:
    trace: Trace
    faults: int
    kind: str | None = None  # divergence | crash | leak | wrong_answer | violation
    detail: str = ""
    shows: str = NOTHING  # replay's word for what clients saw (``verdict.py``)
    responses: tuple[Answer, ...] = ()  # every client's answer, after the drain

    @property
    def failed(self) -> bool:
        return self.kind is not None


def walks(sizes: dict[str, int], variant: Variant, max_steps: int = MAX_STEPS) -> Any:
    from hypothesis import strategies as st

    n, m = sizes["Req"], sizes["Page"]
    low = 2 if variant.switches.decode_reserve == "plus_one" else 1

    def per_request(s: Any) -> Any:
        return st.lists(s, min_size=n, max_size=n).map(tuple)

    # Over a limit one time in four: a rejected request ends at arrive, so even odds would
    # leave most walks without a transfer.
    flags = per_request(st.integers(0, 3).map(lambda x: x == 3))
    reserve = per_request(st.integers(low, max(low, m)))
    # Half the walks run the full length; shrinking goes to the short branch, then down.
    length = st.one_of(st.integers(0, max_steps), st.just(max_steps))
    if variant.switches.radix_cache != "off":
        # The radix race needs one long run without faults (an insert, a release, a reuse:
        # 14 steps): Hypothesis tries the first branch's simplest value first, which here is
        # the full length (the progress-first walk), not an empty one.
        length = st.one_of(st.just(max_steps), st.integers(0, max_steps))
    choice = st.integers(0, 2**16 - 1)
    choices = st.lists(choice, min_size=max_steps, max_size=max_steps).map(tuple)
    hits = per_request(st.booleans()) if variant.switches.decode_prefix_cache else st.just(())
    return st.builds(Walk, flags, flags, reserve, length, choices, hits)


def run_walk(
    variant: Variant,
    walk: Walk,
    *,
    sizes: dict[str, int] = SIZES,
    faults: bool = False,
    engine: EngineFactory = Cluster,
    model: str | Model = "echo",
    reference: Reference | None = None,
    forced: tuple[ActionInstance, ...] | None = None,
    answers: bool = True,
    side: ModelSide | None = None,
) -> WalkResult:
    """One lockstep walk; stops at the first finding. ``forced``: take these steps instead
    of choosing (shrinking's trimming pass); a step the engine cannot take ends the run.
    ``answers=False``: no drain after a finding, whose kind is then only provisional
    (``violation``, or ``wrong_answer`` for the oracle): Hypothesis's search and shrinking
    need only whether a walk fails; the walk itself is the same either way. ``side``: the
    model's half, shared by the walks of a batch (``lockstep.ModelSide``).

    An engine that raises is a finding (``crash``), not the fuzzer's crash: it is shrunk and
    saved like any other (e.g. a planted bug committing decode before the transfer ended
    raised ``AssertionError`` out of ``kvproof fuzz``)."""
    init: dict[str, dict[tuple[int, ...], Any]] = {
        "over_p": {(r,): v for r, v in enumerate(walk.over_p)},
        "over_d": {(r,): v for r, v in enumerate(walk.over_d)},
    }
    if walk.hit:
        init["hit"] = {(r,): v for r, v in enumerate(walk.hit)}
    steps: list[ActionInstance] = []
    n_faults = 0

    def result(
        kind: str | None = None, detail: str = "", violated: str | None = None
    ) -> WalkResult:
        meta = {"reserve": list(walk.reserve), "finding": kind, "detail": detail}
        trace = Trace(variant.name, dict(sizes), init, tuple(steps), violated, meta)
        return WalkResult(trace, n_faults, kind, detail)

    def judged(ls: Lockstep, state: str, violated: str | None, engine_state: bool) -> WalkResult:
        """The finding, named by what the clients saw; without ``answers`` only
        provisionally (a violation, or a wrong answer for the oracle)."""
        if not answers:
            kind = "violation" if violated else "wrong_answer"
            res = result(kind, f"{state}; clients' answers not drained", violated)
            res.shows = shown((), engine_state)
            return res
        # Drain the engine to every client's answer as replay does (no new fault, each step
        # still checked against the model), then judge the answers as replay does: a leak
        # is a foreign canary in a response, never the engine's state.
        _, div = drain_to_answers(ls)
        responses = tuple(ls.answers(reference))
        shows = shown(responses, engine_state)
        kind = shows if shows in (LEAK, WRONG_ANSWER) else "violation"
        res = result(kind, f"{state}; {_why(responses, shows, div)}", violated)
        res.shows, res.responses = shows, responses
        return res

    def go() -> WalkResult:
        nonlocal n_faults
        ls = Lockstep(
            variant,
            sizes,
            init,
            walk.reserve,
            engine=engine,
            model=model,
            max_new_tokens=ANSWER_TOKENS,
            side=side,
        )
        div = ls.check_state(0, "init")
        if div is not None:
            return result("divergence", div.reason)
        # Past the drawn choices the walk goes on with choice 0 (the first candidate:
        # progress of the lowest request), so shrinking the length and the choices gives
        # short runs.
        for i in range(walk.length if forced is None else len(forced)):
            cands = _candidates(ls, faults)
            if forced is not None:
                if forced[i] not in cands:
                    return result()
                inst = forced[i]
            else:
                if not cands:
                    break
                choice = walk.choices[i] if i < len(walk.choices) else 0
                inst = _pick(ls, cands, choice)
            if _is_fault(ls, inst):
                n_faults += 1
            steps.append(inst)
            status, div = ls.apply(inst)
            if status != "ok":  # the engine offered it, so "not enabled" is a divergence too
                reason = div.reason if div else "the engine performs it, the model does not"
                return result("divergence", f"step {len(steps)}: {inst}: {reason}")
            if faults and inst.action in ("done", "ack"):
                ls.redeliver(inst)  # a duplicate status message
                n_faults += 1
            bad_engine, bad_model = ls.engine_violated(), ls.model_violated()
            if bad_engine or bad_model:
                who, bad = ("engine", bad_engine) if bad_engine else ("model", bad_model)
                state = f"{who} violates {', '.join(bad)} after {inst}"
                named = (bad_model or bad_engine)[0]  # the trace's claim is the model's
                return judged(ls, state, named, bool(bad_engine))
        if any(a.wrong for a in ls.answers(reference)):  # a 200 unlike the single node's
            return judged(ls, "no invariant broken", None, False)
        return result()

    try:
        return go()
    except Exception as exc:  # the engine under test raised: a finding
        at = f" at step {len(steps)}: {steps[-1]}" if steps else " before the first step"
        return result("crash", f"the engine raised {type(exc).__name__}: {exc}{at}")


def _why(responses: tuple[Answer, ...], shows: str, div: Divergence | None) -> str:
    """Which response shows the finding, else why none does."""
    if shows == LEAK:
        r = canary_leaks(responses)[0]
        return (
            f"r{r.request} got 200 with tenant {', '.join(r.foreign_canaries)}'s canary: {r.text!r}"
        )
    if shows == WRONG_ANSWER:
        r = wrong_answers(responses)[0]
        return f"r{r.request} got 200 with tokens unlike the single node's, no foreign canary"
    if div is not None:
        return f"no response shows it (the drain stopped: {div.reason} at {div.action})"
    return "no response shows it"


def trim(variant: Variant, walk: Walk, found: WalkResult, **kw: Any) -> WalkResult:
    """Drop steps one at a time while the run still fails the same way, or shows clients
    more (a leak where a wrong answer was found: ``SHOWN``), after Hypothesis's shrinking,
    whose choice encoding keeps steps that only make room for others."""
    best = found

    def better(res: WalkResult) -> bool:
        if len(res.trace.steps) >= len(best.trace.steps) or res.kind is None:
            return False
        if res.kind in SHOWN and found.kind in SHOWN:
            return SHOWN.index(res.kind) <= SHOWN.index(found.kind)
        return res.kind == found.kind

    def keeps(steps: tuple[ActionInstance, ...]) -> tuple[ActionInstance, ...] | None:
        nonlocal best
        res = run_walk(variant, walk, forced=steps, **kw)
        if not better(res):
            return None
        best = res
        return res.trace.steps

    shrink_steps(found.trace.steps, range(len(walk.reserve)), keeps)
    return best


def _pick(ls: Lockstep, cands: list[ActionInstance], choice: int) -> ActionInstance:
    """One choice in FAULT_ODDS goes to a fault (when one is possible), the rest to progress:
    a fault every step or two would cut most requests short before the interesting part."""
    faults = [c for c in cands if _is_fault(ls, c)]
    progress = [c for c in cands if c not in faults]
    pool = (
        faults if (choice % FAULT_ODDS == FAULT_ODDS - 1 and faults) or not progress else progress
    )
    return pool[(choice // FAULT_ODDS) % len(pool)]


def _lands_out_of_order(ls: Lockstep, inst: ActionInstance) -> bool:
    """A reordering network: a write lands before an older one still in flight."""
    writes = ls.cluster.in_flight()
    return bool(writes) and writes[0] != (inst.args[0] + ls.rids.offset, inst.args[1])


# The faults are the protocol's (``Protocol.faults``, from spec/events.py); these engine
# steps are faults too in the states where the rule says so.
STATE_FAULTS: dict[str, Callable[[Lockstep, ActionInstance], bool]] = {
    "land": _lands_out_of_order,
}


def _is_fault(ls: Lockstep, inst: ActionInstance) -> bool:
    if inst.action in ls.protocol.faults:
        return True
    rule = STATE_FAULTS.get(inst.action)
    return rule is not None and rule(ls, inst)


def _candidates(ls: Lockstep, faults: bool) -> list[ActionInstance]:
    def full(i: ActionInstance) -> bool:  # the request decoded its MAX_NEW_TOKENS
        return ls.cluster.status(i.args[0] + ls.rids.offset).generated >= MAX_NEW_TOKENS

    def order(i: ActionInstance) -> tuple[bool, tuple[int, ...], float]:
        # ``insert`` ranks with its request's own events (see ORDER), not after them.
        args = i.args[:1] if i.action == "insert" else i.args
        return i.action in ls.protocol.faults, args, ORDER.get(i.action, 99)

    out = [i for i in ls.engine_enabled() if not (i.action == "step" and full(i))]
    return sorted((i for i in out if faults or not _is_fault(ls, i)), key=order)
