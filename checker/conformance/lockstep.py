"""``Lockstep``: a model state and an engine, advanced together by model actions.

Each step is checked three ways: the model must enable it (else the trace stops: *not
enabled*); the engine must agree (an event enabled on one side only is a divergence, and
every event the engine could perform must be one the model allows); and after it the
abstraction of the engine's state must equal the model's state (else a divergence, shown as
a side-by-side diff). Replay (``replay.py``), fuzz walks (``walk.py``), drains and lassos
drive it. Before the first step a warm-up tenant's canary fills decode's pool (the model's
initial state: every page holds KV of requests outside the instance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.checker.conformance.abstraction import abstract, compare, side_by_side
from kvproof.checker.conformance.mapping import (
    PAGE_SIZE,
    REQUEST_LEAD,
    REUSE_CANARY,
    REUSE_TENANT,
    WARMUP_CANARY,
    WARMUP_TENANT,
    RidMap,
    canary_prompt,
    fill_unwritten,
    page_chunk,
    prompt_tokens,
    request_canary,
    reuse_source,
    system_prompt,
    tenant,
)
from kvproof.checker.conformance.verdict import Divergence
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.limits import INPUT_HEADROOM, Limits
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.oracle import Answer, Reference, answers
from kvproof.spec.variant import Sizes, Variant

# Builds the engine; tests pass a deliberately broken one.
EngineFactory = Callable[..., Cluster]
SideKey = tuple[str, tuple[tuple[str, int], ...], bool]


@dataclass(frozen=True)
class ModelSide:
    """The model's half of a lockstep, built once and shared by every walk of a fuzz batch.

    Building it compiles the DSL into straight-line Python per action instance
    (``model/lang/compiled.py``): done per walk, that compile was about a sixth of a fuzz
    walk's time (issue 30, cProfile of a batch). The interpreters hold no walk's state
    (states are values passed in and out), so one ``ModelSide`` serves any number of walks
    of the same variant, sizes and build."""

    key: SideKey  # the variant, sizes and build it serves
    protocol: Protocol
    concrete: Concrete
    # The rules without the variant's assumptions: a step only they forbid is one the
    # assumed environment never takes (the engine itself may well allow it).
    unassumed: Concrete | None
    actions: frozenset[str]

    @classmethod
    def of(cls, variant: Variant, sizes: dict[str, int], *, liveness: bool = False) -> ModelSide:
        protocol = protocol_of(variant, liveness=liveness)
        unassumed = None
        if variant.assume:
            bare = protocol_of(variant, assumed=False, liveness=liveness)
            unassumed = Concrete(Instance(bare, sizes))
        return cls(
            _key(variant, sizes, liveness),
            protocol,
            Concrete(Instance(protocol, sizes)),
            unassumed,
            frozenset(a.name for a in protocol.actions),
        )


def _key(variant: Variant, sizes: dict[str, int], liveness: bool) -> SideKey:
    return variant.name, tuple(sorted(sizes.items())), liveness


class Lockstep:
    """A model state and an engine, advanced together by model actions."""

    def __init__(
        self,
        variant: Variant,
        sizes: dict[str, int],
        init: dict[str, dict[tuple[int, ...], Any]],
        reserve: tuple[int, ...],
        *,
        engine: EngineFactory = Cluster,
        model: str | Model = "echo",
        max_new_tokens: int = 8,
        shared_head: frozenset[int] | None = None,
        liveness: bool = False,
        side: ModelSide | None = None,
    ) -> None:
        self.variant = variant
        self.sw = variant.switches
        # A lasso comes from the liveness build: its prefill may die (crash, E20).
        if side is None:
            side = ModelSide.of(variant, sizes, liveness=liveness)
        elif side.key != _key(variant, sizes, liveness):  # one variant's engine, another's rules
            raise ValueError(f"a model side built for {side.key[0]} {side.key[1]}")
        self.protocol = side.protocol
        self.concrete = side.concrete
        self.unassumed = side.unassumed
        self.state: State = self.concrete.make_state(init)
        self._actions = side.actions
        # The engine's state as the model sees it, after the last step (``abstracted``).
        self._seen: State | None = None
        ps = PAGE_SIZE
        n_pages = sizes["Page"]
        # A prefix hit (issue 12 item 3): decode's cache holds the prompt's first page.
        self.hits = [bool(init.get("hit", {}).get((r,), False)) for r in range(len(reserve))]
        prompts = [
            prompt_tokens(k, self.sw, ps) + (ps if hit else 0)
            for k, hit in zip(reserve, self.hits, strict=True)
        ]
        longest = max([*prompts, n_pages * ps])
        context = longest + max_new_tokens + 2 * ps
        pool_pages = sum(reserve) + n_pages + 4
        # A placeholder reuses the prefill page freed last: a held warm-up request (see
        # ``_hold_canary``) needs one decode page outside the model's instance.
        # (The model's ``placeholder(r)`` can hold: a prefill reject is not honoured.)
        placeholder = self.sw.placeholder_prompt and not self.sw.honor_pending_reject
        self._spare = n_pages if placeholder else None
        self.cluster = engine(
            variant,
            sizes=Sizes(context, pool_pages * ps, n_pages * ps, ps),
            model=model,
            decode_pages=n_pages + (self._spare is not None),
            prefill_pages=pool_pages,
        )
        self.canaries: dict[str, str] = {}
        self.rids = RidMap(self._warm_up(n_pages))
        self.max_new_tokens = max_new_tokens
        # Decode's radix cache keys a page by its tokens (``refimpl/radix.py``): a hit is a
        # prompt that opens with the page another request inserted, so with the radix cache
        # on a prompt opens with one shared system-prompt page, and the tenant's own canary
        # pages follow. ``shared_head`` (by default every request) names the requests of
        # that application; the others are tenants with prompts of their own, whose first
        # page is their canary (a freed shared page they overwrite then shows it to a hit).
        system = system_prompt(ps) if self.sw.radix_cache != "off" else []
        for r, n in enumerate(prompts):  # each request's own canary (``mapping.py``)
            head = system if shared_head is None or r in shared_head else []
            self.canaries[tenant(r)] = canary = request_canary(r)
            rest = canary_prompt(canary, n - len(head), ps, REQUEST_LEAD)
            self.cluster.submit(tenant(r), head + rest, max_new_tokens)
        self.canaries[REUSE_TENANT] = REUSE_CANARY
        self.step_no = 0

    def _warm_up(self, n_pages: int) -> int:
        """A canary tenant's request fills every decode page with its KV (the model's
        initial state: every page holds KV of requests outside the instance)."""
        c, ps = self.cluster, PAGE_SIZE
        own = n_pages - 1 if self.sw.decode_reserve == "plus_one" else n_pages
        if own < 1:
            return 0
        chunk = page_chunk(WARMUP_CANARY, ps)  # one page, canary after slot 0
        text = (chunk * own)[: own * ps]
        rid = c.submit(WARMUP_TENANT, text, 1)
        self._force_limits(len(text))
        c.run()
        if c.requests[rid].resp != "ok":  # pragma: no cover - the engine's own happy path
            raise RuntimeError(f"warm-up request failed: {c.requests[rid].reason}")
        self.canaries[WARMUP_TENANT] = WARMUP_CANARY
        if own < n_pages:  # plus_one: the warm-up's last page, read at chunk ``own``
            fill_unwritten(c, range(n_pages), WARMUP_CANARY, own)
        if self._spare is not None:
            self._hold_canary(chunk, self._spare)
        return 1 + (self._spare is not None)

    # -- position (issue 12 item 3) -----------------------------------------------------
    def _hold_canary(self, chunk: str, spare: int) -> None:
        """A one-page canary request of the warm-up tenant, run until decoding and held
        there (it never finishes: its decode page ``spare`` lies outside the instance).
        Its prefill page is the one freed last, so prefill's LIFO allocator hands it to the
        next prefill: a placeholder's single page then carries this canary, at positions
        1.. of chunk 0, in the slots the placeholder leaves (the model's ``at_pos``)."""
        c = self.cluster
        rid = c.submit(WARMUP_TENANT, chunk, 1)
        self._force_limits(len(chunk))
        c.apply(Event("arrive", rid))
        c.apply(Event("alloc", rid, spare))
        progress = ("send", "post", "land", "done", "commit")
        while c.status(rid).decode != "running":
            ev = next(e for e in c.enabled() if e.rid == rid and e.name in progress)
            c.apply(ev)

    def _force_limits(self, n: int, over_p: bool = False, over_d: bool = False) -> None:
        # The deployment decides which side rejects: put the prompt on the trace's side of
        # each node's limit (read only at arrive).
        def lim(over: bool) -> Limits:
            cap = n - 1 if over else max(n, 1)
            return Limits(cap + INPUT_HEADROOM, cap)

        self.cluster.set_limits(lim(over_p), lim(over_d))

    # -- the two sides -----------------------------------------------------------------
    def model_step(self, inst: ActionInstance) -> State | None:
        """The model's successor; None when not enabled or not an action of this variant
        (e.g. ``timeout`` exists only with ``release = deferred_timeout``)."""
        if inst.action not in self._actions:
            return None
        return self.concrete.step(self.state, inst)

    def engine_enabled(self, *, assumed: bool = True) -> list[ActionInstance]:
        """The engine's enabled events as model actions; with ``assumed``, less those the
        variant's assumptions exclude from the environment."""
        insts = (self.rids.action(ev) for ev in self.cluster.enabled())
        return [i for i in insts if i is not None and not (assumed and self.excluded(i))]

    def excluded(self, inst: ActionInstance) -> bool:
        """Only an assumption forbids ``inst`` now (the rules alone enable it)."""
        if self.unassumed is None or inst.action not in self._actions:
            return False
        if self.concrete.step(self.state, inst) is not None:
            return False
        return self.unassumed.step(self.state, inst) is not None

    def apply(self, inst: ActionInstance) -> tuple[str, Divergence | None]:
        """('ok' | 'not_enabled' | 'divergence', detail) after one step."""
        step = self.step_no + 1
        nxt = self.model_step(inst)
        ev = self.rids.event(inst)
        engine_ok = self.cluster.can(ev)

        def diverged(why: str) -> tuple[str, Divergence]:
            return "divergence", Divergence(step, str(inst), why)

        if nxt is None:
            if engine_ok and not self.excluded(inst):
                return diverged("the engine performs it, the model does not enable it")
            return "not_enabled", None
        if not engine_ok:
            return diverged("the model enables it, the engine refuses it")
        if inst.action == "arrive":
            r = inst.args[0]
            over = [self.concrete.value(self.state, v, (r,)) for v in ("over_p", "over_d")]
            self._force_limits(len(self.cluster.requests[ev.rid].prompt), *over)
            self.cluster.set_prefix_hit(1 if self.hits[r] else 0)
        self.cluster.apply(ev)
        if inst.action == "expire":  # other traffic reuses the released prefill blocks
            reuse_source(self.cluster, ev.rid)
        self.state = nxt
        self.step_no = step
        div = self.check_state(step, str(inst))
        if div is not None:
            return "divergence", div
        for other in self.engine_enabled(assumed=False):
            if self.model_step(other) is None and not self.excluded(other):
                return diverged(
                    f"afterwards the engine could perform {other}, which the model forbids"
                )
        return "ok", None

    def check_state(
        self,
        step: int,
        label: str,
        state: State | None = None,
        why: str = "the engine's state differs from the model's",
    ) -> Divergence | None:
        """The engine's state against the model's (or ``state``: a lasso's loop start)."""
        eng = self._seen = abstract(self.cluster, self.concrete, self.rids.offset)
        model = self.state if state is None else state
        mism = compare(self.concrete, model, eng)
        if not mism:
            return None
        rows = side_by_side(self.concrete, model, eng, mism)
        return Divergence(step, label, why, tuple(mism), tuple(rows))

    def model_violated(self) -> list[str]:
        return self.concrete.violated(self.state)

    def engine_violated(self) -> list[str]:
        """On the engine's state as a model state: the one the last step's comparison built
        (a walk asks for it again at once; building it was a tenth of a walk's time),
        unless the engine moved outside ``apply`` since (``redeliver``)."""
        if self._seen is None:
            self._seen = abstract(self.cluster, self.concrete, self.rids.offset)
        return self.concrete.violated(self._seen)

    def redeliver(self, inst: ActionInstance) -> None:
        """The status message of ``inst`` (done, ack) arrives a second time (a fault)."""
        self._seen = None
        self.cluster.redeliver(self.rids.event(inst))

    def answers(self, reference: Reference | None = None) -> list[Answer]:
        """What each of the model's requests got (not the warm-up's), with the oracle's
        verdict."""
        return answers(self.cluster, self.canaries, reference, self.rids.offset)

    def describe_request(self, r: int) -> str:
        c, st = self.concrete, self.state
        names = ("dphase", "pphase", "poll", "resp")
        parts = ", ".join(f"{n} {c.value(st, n, (r,))}" for n in names)
        out = f"r{r}: {parts}; " + self.cluster.requests[r + self.rids.offset].reason
        if self.variant.assume:
            out += f" (the variant assumes: {', '.join(self.variant.assume)})"
        return out
