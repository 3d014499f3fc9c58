"""``conform`` as a library call: the release's code against the variant's model, one
``ConformRun`` back (results, files written, ``to_json()``, ``exit_code``).

Exit codes: 0 the code agrees on every walk, 1 a divergence (written as a trace that names
the switch the code contradicts), 2 bad input (raised as ``KvproofInputError`` before any
walk starts).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kvproof.checker.upstream import fetch, settings
from kvproof.checker.upstream.adapters import select
from kvproof.checker.upstream.drive import BASE, COMMON, DECODE, SCHED, Harness, default_disagg
from kvproof.checker.upstream.intake import intake
from kvproof.checker.upstream.loader import Loaded
from kvproof.checker.upstream.raised import Raised, sglang_root, trace_text, upstream_raise
from kvproof.checker.upstream.reserve import reserved_pages
from kvproof.checker.upstream.transfer import PageCounts
from kvproof.checker.upstream.walk import walk
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, initial_assignment
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant

MOONCAKE = "sglang.srt.disaggregation.mooncake.conn"
REAL = frozenset(
    {
        "sglang.srt.environ",
        "sglang.srt.disaggregation.base",
        BASE,
        COMMON,
        MOONCAKE,
        DECODE,
        "sglang.srt.disaggregation.decode_hicache_mixin",
        SCHED,
        # prefill's intake (intake.py)
        "sglang.srt.managers.schedule_batch",
        "sglang.srt.managers.utils",
        "sglang.srt.disaggregation.prefill",
        "sglang.srt.disaggregation.utils",
        # prefill's page count (``kv_to_page_num``)
        "sglang.srt.mem_cache.common",
    }
)
# Read from the tree without importing its module: one function each (``reserve.py``).
ALSO_READ = ("sglang/srt/utils/common.py",)
EXERCISED = (
    f"{DECODE}::DecodeTransferQueue.__init__",
    f"{DECODE}::DecodeTransferQueue.pop_transferred",
    f"{DECODE}::DecodeTransferQueue._defer_release",
    f"{DECODE}::DecodeTransferQueue.resolve_deferred_releases",
    f"{SCHED}::Scheduler.abort_request",
    f"{COMMON}::CommonKVReceiver.__init__ / abort / poll / _check_waiting_timeout",
    f"{COMMON}::CommonKVManager.update_status / register_deferred_abort_room / "
    "note_abort_ack / is_abort_release_safe",
    "sglang.srt.managers.utils::validate_input_length",
    "sglang.srt.managers.schedule_batch::Req.set_finish_with_abort",
    f"{SCHED}::Scheduler._add_request_to_queue",
    "sglang.srt.disaggregation.prefill::PrefillBootstrapQueue.add",
)
SIZES = {"Req": 2, "Page": 3}


@dataclass(frozen=True)
class ConformRun:
    variant: str
    release: str  # the version, or the PATH given
    adapter: str
    env: dict[str, Any]  # what the code ran under (table over the release's defaults)
    env_source: dict[str, str]  # key -> "variant" | "release default"
    walks: int
    steps: int
    seconds: float
    switch: str | None = None  # the switch the code contradicts
    detail: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    decisions: dict[str, int] | None = None  # what the code decided, summed over walks
    exercised: tuple[str, ...] = EXERCISED
    # The release's code raised: the exception, its upstream file:line and the walk step.
    raised: str | None = None
    # Pages decode reserves and prefill sends, per prompt ("over_long", "fits"), as the
    # release's code counts them (transfer.py).
    pages: dict[str, PageCounts] | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.switch is None and self.raised is None else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "sglang": self.release,
            "adapter": self.adapter,
            "verdict": self.verdict,
            "switch": self.switch,
            "raised": self.raised,
            "detail": list(self.detail),
            "env": self.env,
            "env_source": self.env_source,
            "walks": self.walks,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "decisions": self.decisions or {},
            "pages": {k: v.to_json() for k, v in (self.pages or {}).items()},
            "exercised": list(self.exercised),
            "files": list(self.files),
            "exit_code": self.exit_code,
        }

    @property
    def verdict(self) -> str:
        if self.raised is not None:
            return "raised"
        return "conforms" if self.switch is None else "diverges"


def default_release(variant: Variant) -> str:
    """The newest release the variant's ``[upstream]`` table says it conforms to."""
    if variant.engine != "sglang":
        raise KvproofInputError(f"not an SGLang variant (engine {variant.engine!r})", variant.name)
    latest = variant.upstream.latest if variant.upstream else None
    if latest is None:
        why = "is exempt" if variant.upstream else "has no [upstream] table"
        raise KvproofInputError(
            f"no --sglang given and the variant {why}, so it names no release: pass "
            "--sglang VERSION|PATH",
            variant.name,
        )
    return latest


def conform(
    variant: Variant,
    sglang: str,
    *,
    traces: int = 200,
    seed: int = 0,
    faults: bool = False,
    out: Path | None = None,
    max_steps: int = 30,
    env: dict[str, Any] | None = None,
) -> ConformRun:
    """``env`` overrides the variant's ``[upstream.env]`` (a notebook asking "and under
    this setting?"); its keys are checked like the table's."""
    if variant.engine != "sglang":
        raise KvproofInputError(f"not an SGLang variant (engine {variant.engine!r})", variant.name)
    table = variant.upstream
    tree, label = fetch.resolve(sglang)
    env_table = {**(dict(table.env) if table else {}), **(env or {})}
    server_args = dict(table.server_args) if table else {}
    defaults = settings.server_arg_defaults(tree)
    settings.check_server_args(server_args, defaults, str(variant.path))
    args = {**defaults, **server_args}
    if args.get("disaggregation_transfer_backend", "mooncake") != "mooncake":
        raise KvproofInputError(
            "conform drives the mooncake transfer backend only (its manager and receiver)",
            f"{variant.path}: upstream.server_args.disaggregation_transfer_backend",
        )
    start = time.perf_counter()
    with Loaded(tree, REAL) as loaded:
        mods = {name: loaded.module(name) for name in sorted(REAL)}
        envs = mods["sglang.srt.environ"].envs
        settings.check_env(env_table, envs, str(variant.path))
        adapter = select(mods, str(tree))
        with settings.environment(env_table), settings.quiet("sglang"):
            used, source = _env_used(envs, env_table)
            concrete = Concrete(Instance(protocol_of(variant), SIZES))
            inits = list(concrete.initial_states())
            rng = random.Random(seed)
            steps = 0
            backend = mods[MOONCAKE].MooncakeKVManager
            receiver = mods[MOONCAKE].MooncakeKVReceiver
            root = sglang_root(mods)
            decisions: Counter[str] = Counter()
            try:
                over_long = _outside_walk(root, "prefill's intake", lambda: intake(mods, over=True))
                counts = _outside_walk(root, "the page counts", lambda: page_counts(mods))
                # ``get_disagg()``: the release's ServerArgs (a tree without its field
                # declarations gets host receive off and no retraction backup).
                disagg = SimpleNamespace(**{**vars(default_disagg()), **args})
                decisions["intake_retired"] = int(over_long.retired)
                for n in range(1, traces + 1):
                    h = _outside_walk(
                        root, "the harness's setup",
                        lambda: Harness(mods, adapter, backend, receiver, disagg),
                    )  # fmt: skip
                    res = walk(
                        concrete,
                        inits,
                        h,
                        rng,
                        faults=faults,
                        max_steps=max_steps,
                        over_long=over_long,
                        counts=counts,
                    )
                    steps += len(res.steps)
                    decisions.update(h.decisions())
                    if res.raised is not None:
                        files = _write(concrete, variant, res, seed, out, label) if out else ()
                        secs = time.perf_counter() - start
                        return ConformRun(
                            variant.name, label, adapter.name, used, source, n, steps, secs,
                            detail=(res.raised.line_text(),), files=files,
                            decisions=dict(decisions), raised=res.raised.line_text(),
                        )  # fmt: skip
                    if res.switch is not None:
                        files = _write(concrete, variant, res, seed, out, label) if out else ()
                        detail = tuple(m.line() for m in res.mismatches)
                        secs = time.perf_counter() - start
                        return ConformRun(
                            variant.name, label, adapter.name, used, source, n, steps, secs,
                            res.switch, detail, files, dict(decisions), pages=_named(counts),
                        )  # fmt: skip
            except UpstreamRaised as up:  # before any walk step: no trace, the traceback
                files = _write_traceback(up, variant, out, label) if out else ()
                secs = time.perf_counter() - start
                return ConformRun(
                    variant.name, label, adapter.name, used, source, 0, steps, secs,
                    detail=(up.raised.line_text(),), files=files, raised=up.raised.line_text(),
                )  # fmt: skip
    secs = time.perf_counter() - start
    return ConformRun(
        variant.name, label, adapter.name, used, source, traces, steps, secs,
        decisions=dict(decisions), pages=_named(counts),
    )  # fmt: skip


def page_counts(mods: dict[str, Any]) -> dict[bool, PageCounts]:
    """Decode's reservation and prefill's page count for both prompts, from the release."""
    out = {}
    for over in (False, True):
        sent = intake(mods, over=over)
        reserved = reserved_pages(mods, sent.prompt_tokens)
        out[over] = PageCounts(sent.prompt_tokens, reserved, sent.sent_pages)
    return out


def _named(counts: dict[bool, PageCounts]) -> dict[str, PageCounts]:
    return {"over_long": counts[True], "fits": counts[False]}


NAMES = (
    "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE",
    "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT",
    "SGLANG_DISAGGREGATION_WAITING_TIMEOUT",
)


def _env_used(envs: Any, table: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    # A release lacking a switch (0.5.15-0.5.18: no deferred release) does not report it.
    names = sorted(k for k in {*NAMES, *table} if hasattr(type(envs), k))
    used = {k: getattr(envs, k).get() for k in names}
    return used, {k: ("variant" if k in table else "release default") for k in used}


def _write(
    concrete: Concrete, variant: Variant, res: Any, seed: int, out: Path, label: str
) -> tuple[str, ...]:
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    raised = res.raised
    meta = {
        "finding": "upstream_exception" if raised else "divergence",
        "source": f"conform against sglang {label}",
        "switch": res.switch,
        "detail": raised.line_text() if raised else "; ".join(m.line() for m in res.mismatches),
        "seed": seed,
        # Time stalled past the code's release deadline after these steps (no model step).
        "stalls_after_step": list(res.stalls),
    }
    trace = Trace(
        variant.name,
        dict(SIZES),
        initial_assignment(concrete, res.init),
        tuple(res.steps),
        None,
        meta,
    )
    folder = out
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{variant.name}-vs-sglang-{Path(label).name}"
    jsonl, itf = folder / f"{stem}.jsonl", folder / f"{stem}.itf.json"
    write_jsonl(trace, jsonl, protocol=concrete.protocol)
    write_itf(trace, itf, concrete.protocol)
    if raised is None:
        return (str(jsonl), str(itf))
    text = folder / f"{stem}.traceback.txt"
    text.write_text(f"{raised.line_text()}\n\n{res.traceback}", encoding="utf-8")
    return (str(jsonl), str(itf), str(text))


def _write_traceback(up: UpstreamRaised, variant: Variant, out: Path, label: str) -> tuple[str]:
    out.mkdir(parents=True, exist_ok=True)
    text = out / f"{variant.name}-vs-sglang-{Path(label).name}.traceback.txt"
    text.write_text(f"{up.raised.line_text()}\n\n{up.text}", encoding="utf-8")
    return (str(text),)


def _outside_walk(root: Path, what: str, call: Any) -> Any:
    """``call`` into the release's code before a walk: its own exception is an
    ``UpstreamRaised`` (exit 1 at the CLI), kvproof's propagates."""
    try:
        return call()
    except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
        raised = upstream_raise(exc, root, 0, what)
        if raised is None:
            raise
        raise UpstreamRaised(raised, trace_text(exc)) from exc


class UpstreamRaised(Exception):
    """The release's code raised outside any walk step (setup, prefill's intake)."""

    def __init__(self, raised: Raised, text: str) -> None:
        super().__init__(raised.line_text())
        self.raised = raised
        self.text = text
