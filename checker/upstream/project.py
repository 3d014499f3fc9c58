"""The projection compared after each step: what the code decided, next to the model.

Per request: the decode pages it still holds, whether it was aborted, whether its transfer
was committed; per page: a write that landed while its writer did not own it, or a page
handed to a new owner while a write to it was in flight. KV contents are not compared: the
code under test never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvproof.checker.upstream import wire
from kvproof.checker.upstream.drive import Harness
from kvproof.model.lang.concrete import Concrete, State

# The switch a disagreement contradicts, by the model step that last decided the request:
# an abort's free is ``release`` (or ``failed_means_drained`` when the transfer had failed
# first), an ACK's is ``abort_ack``, the waiting timeout's is ``decode_gives_up``.
SWITCH_OF = {
    "abort": "release",
    "timeout": "release",
    "ack": "abort_ack",
    "give_up": "decode_gives_up",
    "fail": "failed_means_drained",
    "done": "success_overwrites_abort",
}


@dataclass(frozen=True)
class View:
    pages: frozenset[int]
    aborted: bool
    committed: bool


@dataclass(frozen=True)
class Mismatch:
    request: int
    what: str  # "pages" | "aborted" | "committed" | "stray" | "reuse_inflight"
    model: Any
    code: Any

    def line(self) -> str:
        return f"r{self.request} {self.what}: model {self.model}, code {self.code}"


def model_view(concrete: Concrete, state: State, r: int, committed: set[int]) -> View:
    pages = concrete.inst.sizes["Page"]
    owned = frozenset(p for p in range(pages) if concrete.value(state, "owns", (r, p)))
    resp = concrete.value(state, "resp", (r,))
    return View(owned, resp in ("aborted", "error"), r in committed)


def code_view(h: Harness, r: int) -> View:
    return View(h.pages.of(r), r in h.outcome.aborted, r in h.outcome.committed)


def compare(concrete: Concrete, state: State, h: Harness, committed: set[int]) -> list[Mismatch]:
    out: list[Mismatch] = []
    for r in range(concrete.inst.sizes["Req"]):
        m, c = model_view(concrete, state, r, committed), code_view(h, r)
        for what in ("pages", "aborted", "committed"):
            a, b = getattr(m, what), getattr(c, what)
            if a != b:
                out.append(Mismatch(r, what, _show(a), _show(b)))
        # The model can commit now (KVPoll Success): the code, which polls every pass, must
        # have (a code that holds a Success, or never polls it, is caught here).
        ready = concrete.value(state, "dphase", (r,)) == "transfer" and (
            concrete.value(state, "poll", (r,)) == "success"
        )
        if ready and r not in h.outcome.committed:
            out.append(Mismatch(r, "committed", True, False))
        if r in h.partial_release:  # the model's ack is every rank's; the code's was not
            n = len(wire.PREFILL_RANKS)
            out.append(Mismatch(r, "released_after_acks", f"{n} of {n}", h.partial_release[r]))
    pages = concrete.inst.sizes["Page"]
    model_stray = {p for p in range(pages) if concrete.value(state, "stray", (p,))}
    if model_stray != h.pages.stray:
        out.append(Mismatch(-1, "stray", sorted(model_stray), sorted(h.pages.stray)))
    return out


def _show(x: Any) -> Any:
    return sorted(x) if isinstance(x, frozenset) else x


def intake_mismatch(concrete: Concrete, state: State, r: int, code: Any) -> Mismatch | None:
    """After ``arrive(r)`` of a prompt over prefill's limit only: did prefill retire it at
    intake (``honor_pending_reject``), and else queue it as the 1-token stub
    (``placeholder_prompt``)? ``code`` is ``intake.Intake`` for an over-long prompt."""
    if not concrete.value(state, "over_p", (r,)) or concrete.value(state, "over_d", (r,)):
        return None
    retired = concrete.value(state, "pphase", (r,)) == "stopped"
    if retired != code.retired:
        return Mismatch(r, "retired_at_intake", retired, code.retired)
    stub = bool(concrete.protocol.switches.placeholder_prompt)
    if not retired and stub != (code.queued_tokens == 1):
        return Mismatch(r, "queued_as_1_token_stub", stub, code.queued_tokens == 1)
    return None


INTAKE_SWITCH = {
    "retired_at_intake": "honor_pending_reject",
    "queued_as_1_token_stub": "placeholder_prompt",
}


def switch_for(mismatch: Mismatch, last: dict[int, str], failed_first: set[int]) -> str:
    if mismatch.what == "stray":
        return "release"
    if mismatch.what in INTAKE_SWITCH:
        return INTAKE_SWITCH[mismatch.what]
    action = last.get(mismatch.request, "")
    if action == "abort" and mismatch.request in failed_first:
        return "failed_means_drained"
    return SWITCH_OF.get(action, "release")
