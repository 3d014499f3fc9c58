"""SGLang as a conform engine (``checker/conform/engine.py::Engine``): the release's decision
modules loaded once per run (``loader.Loaded``), a fresh ``drive.Harness`` per walk.

``open_sglang(variant, release, env)`` checks its input before loading anything heavy
(the variant's engine, the ``[upstream.server_args]`` keys, the transfer backend) and
yields the engine; the loaded modules leave ``sys.modules`` when it exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any, TypeVar

from kvproof.checker.conform.engine import RequestSpec
from kvproof.checker.upstream import fetch, settings
from kvproof.checker.upstream.adapters import select
from kvproof.checker.upstream.adapters.adapter import Adapter
from kvproof.checker.upstream.drive import BASE, COMMON, DECODE, SCHED, Harness, default_disagg
from kvproof.checker.upstream.intake import Intake, intake
from kvproof.checker.upstream.loader import Loaded
from kvproof.checker.upstream.raised import as_finding, sglang_root
from kvproof.checker.upstream.reserve import reserved_pages
from kvproof.checker.upstream.transfer import PageCounts
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
    # prefill's status and what it sends decode (status.py)
    f"{MOONCAKE}::MooncakeKVSender.__init__ / abort",
    f"{COMMON}::CommonKVManager.conclude_transfer / conclude_failure / "
    "send_kv_status_message (0.5.20+)",
    f"{MOONCAKE}::MooncakeKVManager._handle_abort_notification (0.5.22+)",
    f"{COMMON}::CommonKVManager.parse_kv_status_message / apply_prefill_status (0.5.20+)",
    # prefill's chunked send (chunks.py)
    "sglang.srt.disaggregation.prefill::SchedulerDisaggregationPrefillMixin.send_kv_chunk",
    f"{MOONCAKE}::MooncakeKVSender.init / send",
    # decode's admission (admission.py)
    f"{SCHED}::Scheduler._add_request_to_queue (decode) / retire_unadmitted_request",
    f"{DECODE}::DecodePreallocQueue.add / _check_if_req_exceed_kv_capacity / "
    "_create_receiver_and_enqueue / _resolve_prefill_dp_rank",
    "sglang.srt.disaggregation.utils::is_unadmitted_reject",
    "sglang.srt.managers.schedule_batch::Req.update_finish_state",
)
SIZES = {"Req": 2, "Page": 3}
T = TypeVar("T")
NAMES = (
    "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE",
    "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT",
    "SGLANG_DISAGGREGATION_WAITING_TIMEOUT",
)


@dataclass
class SglangEngine:
    release: str
    mods: dict[str, ModuleType]
    adapter_obj: Adapter
    disagg: Any
    settings: dict[str, Any]
    settings_source: dict[str, str]
    name: str = "sglang"
    sizes: Mapping[str, int] = field(default_factory=lambda: dict(SIZES))
    _intake: Intake | None = None
    _counts: dict[bool, PageCounts] | None = None

    @property
    def adapter(self) -> str:
        return self.adapter_obj.name

    @property
    def over_long(self) -> Intake:
        """Prefill's intake of an over-long prompt, asked once (the same for every walk)."""
        if self._intake is None:
            self._intake = self._guarded("prefill's intake", lambda: intake(self.mods, over=True))
        return self._intake

    @property
    def counts(self) -> dict[bool, PageCounts]:
        """Decode's reservation and prefill's page count, per prompt (over prefill's limit
        or not), from the release's code (``reserve.py``, ``intake.py``)."""
        if self._counts is None:
            self._counts = self._guarded("the page counts", lambda: page_counts(self.mods))
        return self._counts

    @property
    def pages(self) -> dict[str, PageCounts]:
        """The counts by prompt, for the run's report."""
        return {"over_long": self.counts[True], "fits": self.counts[False]}

    def harness(self, requests: tuple[RequestSpec, ...]) -> Harness:
        over_long, counts = self.over_long, self.counts
        return self._guarded(
            "the harness's setup",
            lambda: Harness(
                self.mods,
                self.adapter_obj,
                self.mods[MOONCAKE].MooncakeKVManager,
                self.mods[MOONCAKE].MooncakeKVReceiver,
                self.disagg,
                requests=requests,
                over_long=over_long,
                counts=counts,
            ),
        )

    def _guarded(self, during: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
            finding = as_finding(exc, sglang_root(self.mods), during)
            if finding is None:
                raise
            raise finding from exc

    def exercised(self) -> tuple[str, ...]:
        return EXERCISED

    def run_decisions(self) -> Mapping[str, int]:
        # Asked once, before the walks (a raise here is the setup's): intake, then counts.
        retired = int(self.over_long.retired)
        self.counts  # noqa: B018
        return {"intake_retired": retired}


def check_variant(variant: Variant) -> None:
    if variant.engine != "sglang":
        raise KvproofInputError(f"not an SGLang variant (engine {variant.engine!r})", variant.name)


def page_counts(mods: dict[str, ModuleType]) -> dict[bool, PageCounts]:
    """Decode's reservation and prefill's page count for both prompts, from the release."""
    out = {}
    for over in (False, True):
        sent = intake(mods, over=over)
        reserved = reserved_pages(mods, sent.prompt_tokens)
        chunks = sent.chunks
        pages = chunks.sent if chunks is not None else sent.sent_pages
        out[over] = PageCounts(sent.prompt_tokens, reserved, pages, chunks)
    return out


@contextmanager
def open_sglang(
    variant: Variant, sglang: str, env: dict[str, Any] | None = None
) -> Iterator[SglangEngine]:
    """``env`` overrides the variant's ``[upstream.env]`` (a notebook asking "and under
    this setting?"); its keys are checked like the table's."""
    check_variant(variant)
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
    with Loaded(tree, REAL) as loaded:
        mods = {name: loaded.module(name) for name in sorted(REAL)}
        envs = mods["sglang.srt.environ"].envs
        settings.check_env(env_table, envs, str(variant.path))
        adapter = select(mods, str(tree))
        with settings.environment(env_table), settings.quiet("sglang"):
            # A release lacking a switch (0.5.15-0.5.18: no deferred release) does not report it.
            names = sorted(k for k in {*NAMES, *env_table} if hasattr(type(envs), k))
            used = {k: getattr(envs, k).get() for k in names}
            source = {k: ("variant" if k in env_table else "release default") for k in used}
            # ``get_disagg()``: the release's ServerArgs (a tree without its field
            # declarations gets host receive off and no retraction backup).
            disagg = SimpleNamespace(**{**vars(default_disagg()), **args})
            yield SglangEngine(label, mods, adapter, disagg, used, source)
