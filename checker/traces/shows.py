"""What each stored counterexample shows a client when replayed on the reference engine.

A model counterexample breaks an invariant of the model; whether a *client* sees it is a
separate, stronger claim, decided only by the engine's output (``kvproof replay``):

- ``leak``: a response carries another tenant's canary;
- ``wrong_answer``: a 200 whose tokens differ from the single-node engine's, without a
  foreign canary (e.g. the request's own KV read at the wrong position);
- ``engine_state``: the invariant is broken on the engine's state (a stray write, a 200 for
  an aborted request) and no response shows foreign data.

The corpus writes the claim and its reason into each trace's header (``meta.shows``,
``meta.shows_why``); ``tests/checker/conformance/test_replay_corpus.py`` replays every
trace and fails when the engine stops showing what the header says. The claims are written
by hand, from replays, never derived from the model: they are what the engine did.
"""

from __future__ import annotations

LEAK = "leak"
WRONG_ANSWER = "wrong_answer"
ENGINE_STATE = "engine_state"
KINDS = (LEAK, WRONG_ANSWER, ENGINE_STATE)
# A claim is (kind, why): the kind one of KINDS, written with its reason into the header.
Claim = tuple[str, str]

# Buggy variants whose bug cannot put another tenant's data into a response, and why.
CANNOT_LEAK: dict[str, str] = {
    "sglang-pd-success-overwrites-abort": (
        "Success overwrites a pending abort (#33507): the aborted request gets 200, but its "
        "own transfer completed, so it reads only its own KV: a wrong status, no foreign data"
    ),
    "vllm-nixl-push-head-trim": (
        "head trimming (before #48758) misplaces the request's own chunks: decode reads its "
        "own KV at the wrong positions, a wrong answer with no other tenant's data in it"
    ),
}

_STRAY = (
    "the late write lands in a page no request holds; the drain's next owner of the page "
    "overwrites it with its own transfer before any read, so no response shows it (the "
    "variant's isolation trace has a victim read such a write: a leak)"
)
_DEFAULT: dict[str, Claim] = {
    "isolation": (LEAK, "the reader's response carries another tenant's canary"),
    "no_stray_write": (ENGINE_STATE, _STRAY),
}
_PLACEHOLDER = (
    LEAK,
    "the rejected prompt's 1-token placeholder gets 200 and decode reads stale pages: the "
    "response carries the warm-up tenant's canary (the same run as the isolation trace)",
)
# By trace stem, where the default for the invariant does not hold.
_BY_TRACE: dict[str, Claim] = {
    "sglang-0.5.19-pd.reject_final": _PLACEHOLDER,
    "sglang-pd-checksum-decode-only.reject_final": _PLACEHOLDER,
    "sglang-pd-success-overwrites-abort.reject_final": (
        ENGINE_STATE,
        CANNOT_LEAK["sglang-pd-success-overwrites-abort"],
    ),
    "vllm-0.34-nixl-push.reject_final": (
        ENGINE_STATE,
        "an abort reaching prefill after its request finished is a no-op (vLLM 0.34.0"
        " scheduler.py::finish_requests skips a finished request) and the WRITE's Success"
        " stands: the aborted request gets 200 with its own KV, no other tenant's data",
    ),
    "vllm-nixl-push-head-trim.isolation": (WRONG_ANSWER, CANNOT_LEAK["vllm-nixl-push-head-trim"]),
    "sglang-pd-decode-radix-race.isolation": (
        WRONG_ANSWER,
        "the shortest isolation trace has two requests: the freed head page the tree still "
        "maps is overwritten by the hit request's own later chunk, so it reads its own KV at "
        "the head position (a wrong answer); the 3-request witness "
        "(.isolation.foreign) shows another tenant's canary",
    ),
    "sglang-pd-decode-radix-race.isolation.foreign": (
        LEAK,
        "a request of another application is handed the page the tree still maps and writes "
        "its canary there; the hit request's response carries it (SGLang #38319)",
    ),
    "sglang-pd-decode-radix-race.one_owner": (
        ENGINE_STATE,
        "the trace ends when a transfer writes a page the radix tree still maps; the page "
        "is read later in the variant's isolation trace",
    ),
    "vllm-nixl-failure-as-success.no_stray_write": (
        WRONG_ANSWER,
        "the failure reported as success commits a never-written page, but the trace "
        "finishes the request after 2 tokens, too few to carry a whole canary; the late "
        "write then lands in a free page (the variant's isolation trace shows the canary)",
    ),
}


def expected(stem: str, invariant: str) -> dict[str, str] | None:
    """The header entries saying what the trace ``<variant>.<invariant>[.<witness>]``
    (``stem``) shows on the engine (None: not known)."""
    claim = _BY_TRACE.get(stem) or _DEFAULT.get(invariant)
    return None if claim is None else {"shows": claim[0], "shows_why": claim[1]}
