"""A model trace step told as what the engines did, for people reading a counterexample.

``check``, ``conform``, ``replay``, ``advise`` and the HTML report print these sentences; the
model's own names (``dphase``, ``owns(r0, p1): F->T``, ``3 Req / 6 Page``) are kept for
``--json`` and ``--raw``. The input is the plain row every trace view already has (an
action, its arguments, the cells it changed: ``trace_view.trace_rows``), so this module reads
no model state and imports nothing of the model: a renderer hands it rows and a ``Voice``.

The sentences follow the events' meaning in ``spec/events.py`` and the protocol's rules
(``model/handoff/rules/``); a pool is told as its pages, a request as ``r0``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The model's variable names: what a person never has to read outside --json/--raw.
MODEL_NAMES = (
    "dphase", "pphase", "poll", "resp", "pend", "abort_msg", "src_ok", "owns", "dst",
    "posted", "inflight", "holds", "filled", "stray", "leaked", "at_pos", "over_p", "over_d",
    "hit", "cached", "shares", "prefix_ok", "shared_write", "p_dead",
)  # fmt: skip


@dataclass(frozen=True)
class Voice:
    """Whose words: the engine's name and which side writes the KV."""

    engine: str = "the engine"  # "SGLang", "vLLM"
    push: bool = True  # prefill writes into decode's pages (SGLang/Mooncake); pull: decode reads
    release_timeout: str = "the release timeout"


def voice_of(engine: str, transfer_mode: str = "push") -> Voice:
    """The voice for a variant's ``engine`` field and ``transfer_mode`` switch."""
    if engine == "sglang":
        # srt/environ.py: SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT = 30.0
        return Voice("SGLang", transfer_mode != "pull", "the release timeout (30 s by default)")
    name = {"vllm": "vLLM", "dynamo": "Dynamo"}.get(engine, engine)
    return Voice(name, transfer_mode != "pull")


def voice_for(check: Any, raw: bool = False) -> Voice | None:
    """The voice of a check's variant (a ``VariantVerdict``, a ``LivenessCheck``); None for
    ``--raw`` and for a user protocol, whose steps engine words do not tell."""
    if raw or check.protocol is None or check.protocol.name != "handoff":
        return None
    return voice_of(check.variant.engine, getattr(check.variant.switches, "transfer_mode", ""))


def _pages(pages: Iterable[int]) -> str:
    names = [f"p{p}" for p in sorted(pages)]
    if not names:
        return "no page"
    if len(names) == 1:
        return f"page {names[0]}"
    return "pages " + ", ".join(names[:-1]) + " and " + names[-1]


def _to(row: Mapping[str, Any], var: str, args: tuple[int, ...] | None = None) -> Any:
    """The new value of ``var`` (at ``args``) if the step changed it, else None."""
    for c in row.get("changes", ()):
        if c["var"] == var and (args is None or tuple(c["args"]) == args):
            return c["to"]
    return None


def _freed(row: Mapping[str, Any]) -> list[int]:
    return [c["args"][1] for c in row.get("changes", ()) if c["var"] == "owns" and not c["to"]]


# The events told the same way every time: one sentence, or (push, pull) when who writes the
# KV matters; ``{freed}``: the pages the step freed.
_SAID: dict[str, str | tuple[str, str]] = {
    "alloc": "decode reserved p{p} for {req}",
    "post": (
        "prefill posted an RDMA write of {req}'s KV into p{p}",
        "decode posted an RDMA read of {req}'s KV into p{p}",
    ),
    "p_abort": "an abort for {req} reached prefill (a timeout or the client left)",
    "finish": "{req} finished; decode freed {freed}",
    "abort_seen": "prefill received the ABORT for {req} and stopped sending",
    "ack": (
        "prefill confirmed {req}'s writes drained; decode freed {freed}",
        "decode's reads of {req}'s writes drained; decode freed {freed}",
    ),
    "timeout": "no drain confirmation for {req} within {timeout}: decode freed {freed} anyway",
    "expire": (
        "prefill freed {req}'s source blocks while still sending them",
        "prefill's hold on {req}'s blocks expired; the blocks may be reused",
    ),
    "insert": "decode cached p{p} in its radix tree as {req}'s prompt head",
    "share": "{req} matched decode's radix cache and reads p{p} as its prompt head",
    "crash": "the prefill serving {req} died and will never report",
}


class Story:
    """Steps told in order; remembers who owns which page so a late write can be named."""

    def __init__(self, voice: Voice | None = None) -> None:
        self.voice = voice or Voice()
        self.owner: dict[int, int] = {}

    def tell(self, row: Mapping[str, Any]) -> str:
        text = self._say(row)
        for c in row.get("changes", ()):
            if c["var"] == "owns":
                r, p = c["args"]
                if c["to"]:
                    self.owner[p] = r
                elif self.owner.get(p) == r:
                    del self.owner[p]
        return text

    def _say(self, row: Mapping[str, Any]) -> str:
        act = row["action"]
        args = row.get("args", {})
        r, p = args.get("r"), args.get("p")
        req = f"r{r}"
        said = _SAID.get(act)
        if said is not None:
            text = said if isinstance(said, str) else said[not self.voice.push]
            freed = _pages(_freed(row))
            return text.format(req=req, p=p, freed=freed, timeout=self.voice.release_timeout)
        say = getattr(self, f"_{act}", None)
        if say is not None:
            return say(row, req, r, p)
        return f"{act} for {req}" + (f" on p{p}" if p is not None else "")

    # -- the other events of spec/events.py: their words depend on what they changed ------
    def _arrive(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        if _to(row, "resp", (r,)) == "rejected":
            return f"the router sent {req}; its prompt was rejected at admission (400)"
        if _to(row, "pend", (r,)):
            return (
                f"the router sent {req}; prefill rejected its prompt but left it queued "
                "with a pending abort, and decode admitted it"
            )
        return f"the router sent {req} to prefill and decode; both admitted it"

    def _send(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        dst = [c["args"][1] for c in row.get("changes", ()) if c["var"] == "dst" and c["to"]]
        if self.voice.push:
            return f"decode sent {req}'s page table ({_pages(dst)}) to prefill"
        return f"decode began reading {req}'s KV from prefill into {_pages(dst)}"

    def _land(self, row: Mapping[str, Any], req: str, r: int, p: int) -> str:
        whose = f"{req}'s KV" if _to(row, "holds", (p, r)) is not False else "stale KV"
        if _to(row, "holds", (p, r)) is None and any(
            c["var"] == "holds" and c["args"][0] == p for c in row.get("changes", ())
        ):
            whose = "KV from blocks prefill had already reused"
        text = f"the {'write' if self.voice.push else 'read'} of {whose} landed in p{p}"
        holder = self.owner.get(p)
        if holder != r:
            text += ", which decode had " + (
                f"since given to r{holder}" if holder is not None else "already freed"
            )
        return text

    def _done(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        failed = _to(row, "poll", (r,)) == "failed"
        who = "prefill" if self.voice.push else "decode"
        if failed:
            return f"{who} reported {req}'s transfer Failed (its pending abort won)"
        return f"{who} reported {req}'s transfer done"

    def _fail(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        status = _to(row, "poll", (r,))
        as_ = " but decode was told Success" if status == "success" else ""
        return f"{req}'s transfer failed{as_}; writes already posted may still land"

    def _commit(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        if _to(row, "resp", (r,)) == "error":
            return f"decode's check caught {req}'s bad pages and failed it (error status)"
        text = f"decode committed {req} and read its pages"
        if _to(row, "leaked", (r,)):
            text += ", which do not all hold its own KV"
        return text + "; the client gets 200"

    def _step(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        if _to(row, "resp", (r,)) == "error":
            return f"decode's page check caught {req}'s foreign page and failed it"
        text = f"decode ran another step of {req}, reading its pages again"
        return text + (" (not all its own KV)" if _to(row, "leaked", (r,)) else "")

    def _abort(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        freed = _freed(row)
        if _to(row, "dphase", (r,)) == "draining":
            held = sorted(q for q, o in self.owner.items() if o == r)
            kept = f"held {_pages(held)} until prefill confirms its writes drained"
        else:
            kept = f"freed {_pages(freed)} at once" if freed else "had no page to free"
        tell = " and sent ABORT to prefill" if self.voice.push else ""
        return f"the client aborted {req}; decode {kept}{tell}"

    def _give_up(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        freed = _freed(row)
        did = f"freed {_pages(freed)} at once" if freed else "kept its pages held"
        return f"decode gave up waiting for {req}'s transfer without telling prefill and {did}"

    def _stale_ack(self, row: Mapping[str, Any], req: str, r: int, p: Any) -> str:
        freed = _freed(row)
        did = f"decode counted it and freed {_pages(freed)}" if freed else "decode ignored it"
        return f"a late ABORT_ACK of an earlier abort of {req}'s room arrived; {did}"


def _same(row: Mapping[str, Any], action: str, r: Any, p: Any = None) -> bool:
    args = row.get("args", {})
    return row["action"] == action and args.get("r") == r and (p is None or args.get("p") == p)


def brief_words(rows: Iterable[Mapping[str, Any]], voice: Voice | None = None) -> list[str]:
    """Fewer, fuller phrases for a story: a request's reservations and its page table in
    one ("decode reserved p0 and p1 for r0 and sent the page table to prefill"), a write
    posted and landing at once in one ("prefill wrote r0's KV into p0")."""
    rows = list(rows)
    told = step_words(rows, voice)
    push = (voice or Voice()).push
    out: list[str] = []
    i = 0
    while i < len(rows):
        row, args = rows[i], rows[i].get("args", {})
        r, p = args.get("r"), args.get("p")
        if row["action"] == "arrive" and told[i].endswith("both admitted it"):
            out.append(f"r{r} arrived")
        elif row["action"] == "alloc":
            pages = [p]
            while i + 1 < len(rows) and _same(rows[i + 1], "alloc", r):
                i += 1
                pages.append(rows[i]["args"]["p"])
            text = f"decode reserved {_pages(pages)} for r{r}"
            if i + 1 < len(rows) and _same(rows[i + 1], "send", r):
                i += 1
                text += " and sent the page table to prefill" if push else " and began reading"
            out.append(text)
        elif row["action"] == "post" and i + 1 < len(rows) and _same(rows[i + 1], "land", r, p):
            landed = told[i + 1]
            tail = landed.split(f"landed in p{p}", 1)[1] if f"landed in p{p}" in landed else ""
            whose = landed.split(" of ", 1)[-1].split(" landed", 1)[0]
            who = "prefill wrote" if push else "decode read"
            out.append(f"{who} {whose} into p{p}{tail}")
            i += 1
        else:
            out.append(told[i])
        i += 1
    return out


def step_words(rows: Iterable[Mapping[str, Any]], voice: Voice | None = None) -> list[str]:
    """One sentence per row (``trace_view.trace_rows`` rows), in order."""
    story = Story(voice)
    return [story.tell(row) for row in rows]


def story(
    rows: Iterable[Mapping[str, Any]],
    why: str,
    voice: Voice | None = None,
    initial: Iterable[str] = (),
) -> str:
    """A counterexample in two sentences: what the engines did, then why it is wrong
    (``why``: the explanation sentence the protocol already writes in engine words)."""
    said = brief_words(rows, voice)
    facts = [_fact(f) for f in initial if "within both limits" not in f]
    lead = (", ".join(facts) + "; ") if facts else ""
    return f"{_sentence(lead + '; '.join(said))} {_sentence(why)}".strip()


def _fact(text: str) -> str:
    """``r0: prompt over prefill's limit`` -> ``r0's prompt is over prefill's limit``."""
    who, _, what = text.partition(": ")
    return f"{who}'s {what.replace('prompt over', 'prompt is over', 1)}" if what else text


def _sentence(text: str) -> str:
    """Capitalised (unless it opens with a request's or page's name) and full-stopped."""
    text = text.strip()
    if not text:
        return ""
    if not re.match(r"[rp]\d", text):
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


# How a lasso's loop is marked wherever a trace is printed as lines (issue #29 item 3). TLC
# prints a lasso's states and then "Back to state N"; kvproof prints steps, so the mark
# before the loop's first step says the steps below repeat, and the one after the last step
# names the step the run goes back to (the loop's first, ``loop + 1``). One wording for the
# check table, the JUnit/SARIF text and any other printer, so a reader learns it once.
LOOP_START = "-- loop: the following steps repeat forever --"


def back_to(loop: int) -> str:
    """The closing mark: after the last step the run is back at step ``loop + 1``."""
    return f"-- back to step {loop + 1} --"


def marked_lines(lines: Sequence[str], loop: int | None) -> list[str]:
    """One line per step, with the loop's two marks (unchanged for a safety trace)."""
    if loop is None:
        return list(lines)
    return [*lines[:loop], LOOP_START, *lines[loop:], back_to(loop)]


def uses_model_names(text: str) -> list[str]:
    """The model's variable names ``text`` uses as names (``owns(``, ``dphase``), for the
    tests that keep them out of what people read."""
    found = [n for n in MODEL_NAMES if re.search(rf"\b{n}\b(\(|:|=| ->)", text)]
    return found + re.findall(r"\b\d+ (?:Req|Page)\b", text)


# Page state a page-pool view shows beyond owner, contents and writes (the radix cache, the
# ghosts), in words: ``cached`` -> "in decode's radix cache".
_PAGE_WORDS = {
    "cached": "in decode's radix cache",
    "prefix_ok": "cached KV intact",
    "shared_write": "✖ written while the radix tree mapped it",
    "stray": "✖ STRAY write",
    "at_pos": "chunk at its position",
}


def page_word(extra: str) -> str:
    """A page-pool cell's extra mark (``trace_view.page_extra``: ``cached``, ``shares(r0)``)
    in words."""
    name, _, rest = extra.partition("(")
    if name == "shares":
        return f"{rest.rstrip(')')} reads it as its prompt head"
    return _PAGE_WORDS.get(name, extra)
