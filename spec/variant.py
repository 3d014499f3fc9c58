"""Named variants: real engine versions and configurations, buggy and fixed.

A variant is the contract between the model and the engine: the same TOML file sets the
model's behaviour switches and configures the reference engine (see ``spec/handoff.md``).
Loading is strict: an unknown key, a missing key or a bad value is a ``KvproofInputError``
naming the file and the key, never a silent default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from kvproof.spec.assumptions import check_assume
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.files import read_text
from kvproof.spec.invariants import INVARIANTS, VERDICTS, check_expect
from kvproof.spec.lines import key_lines
from kvproof.spec.liveness import split_expect
from kvproof.spec.names import did_you_mean
from kvproof.spec.upstream import Upstream, parse_upstream

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"

# Allowed values of the enumerated switches; booleans are checked by type.
CHOICES: dict[str, tuple[str, ...]] = {
    "transfer_mode": ("push", "pull"),
    "decode_reserve": ("own_prompt", "plus_one"),
    "release": ("immediate", "deferred_ack", "deferred_timeout"),
    "prefill_hold": ("until_read", "lease", "early_free"),
    # -- issue 12 (variants): switches of the widened catalog ------------------------------
    "transfer_checksum": ("off", "both", "prefill_only", "decode_only"),
    "failure_status": ("failed", "success", "silent"),
    "abort_ack": ("after_drain", "before_drain"),
    "decode_gives_up": ("never", "free_at_once", "hold"),
    # -- position and sharing (issue 12 item 3) --
    "remote_trim": ("tail", "head"),
    "radix_cache": ("off", "refcounted", "free_while_cached"),
}


@dataclass(frozen=True)
class Switches:
    """Behaviour switches: each names a real design choice of a real engine.

    The comments cite where the behaviour comes from; ``spec/handoff.md`` says what each
    switch changes in the protocol.
    """

    # push: prefill writes into decode's pages (SGLang + Mooncake);
    # pull: decode reads prefill's blocks (vLLM NixlConnector).
    transfer_mode: str
    # The disaggregation admission queues retire a request whose reject is pending
    # (``to_finish`` set) before any allocation or transfer (SGLang #38935, #38704).
    # False reproduces #30233: the queues only tested ``finished()``.
    honor_pending_reject: bool
    # A prompt that prefill rejects is replaced by a 1-token placeholder (#30233), so
    # prefill writes one page whatever decode reserved.
    placeholder_prompt: bool
    # How decode sizes its reservation: from its own copy of the prompt, or one page more
    # than prefill writes (vLLM PR #50558).
    decode_reserve: str
    # Decode's commit compares the length prefill wrote with its reservation.
    written_length_check: bool
    # Prefill's Success reaches decode after a prefill-side abort: 200 instead of 400.
    # Fixed by SGLang #36612 ("a Success requested after a failure ... is downgraded").
    success_overwrites_abort: bool
    # When decode frees an aborted or failed request's pages: at once (before SGLang's
    # deferred release, #24527/#35049), after every prefill rank ACKs that its writes
    # drained, or on a timeout without the ACK (the remaining gap).
    release: str
    # Decode treats a Failed transfer as drained and frees at once (Mooncake: a batch can
    # report FAILED while sibling writes still land).
    failed_means_drained: bool
    # Per-transfer Adler-32 over the request's pages (SGLang #39500, server arg
    # --disaggregation-enable-kv-checksum, read by each role): "both" checks at commit.
    # Decode skips the comparison when the checksum it received is 0, so "prefill_only"
    # (decode never compares) and "decode_only" (prefill sends 0) silently check nothing.
    transfer_checksum: str
    # Per-page owner tags checked before every decode read (Cloudflare's prototype).
    page_tags: bool
    # Prefill holds its blocks until decode's read completes, or frees them when a lease
    # expires even if decode still holds a reference (pull: vLLM #52234; push: vLLM NIXL
    # push_worker.py::get_transfer_results reports an expired request finished_sending
    # with its WRITE in flight). "early_free" (push): prefill frees its source blocks
    # between its writes (dynamo #826, MLA path).
    prefill_hold: str
    # -- position and sharing (issue 12 item 3) --
    # Decode's prefix cache matches the head of a prompt and decode receives only the rest
    # (vLLM prefix caching on D with NIXL; SGLang ``disaggregation_decode_enable_radix_cache``,
    # #19746): decode has fewer pages than prefill computed (num_local < num_remote).
    decode_prefix_cache: bool
    # Which of the sender's blocks go to decode's local ones when decode has fewer: the
    # last (tail: what decode lacks; vLLM ``_apply_prefix_caching``) or the first (head:
    # NIXL push before #48758, so local block i gets remote block i, the wrong position).
    remote_trim: str
    # -- issue 12 (variants) ----------------------------------------------------------------
    # What decode sees when a transfer fails: "failed", or "success" (vLLM #52234's HMA
    # path skips _invalid_block_ids; dynamo #15079 marks a failed KVBM transfer loaded;
    # LMCache #2972 review: completion notified after a failed NIXL write), or "silent":
    # decode is never told (vLLM NIXL push, #50754: a failed WRITE leaves D waiting).
    failure_status: str
    # When prefill sends ABORT_ACK: after its writes drained, or before (NIXL ACKs a
    # cleared room early, #35360 review "this is a real hole"; #38961 points 1-3).
    abort_ack: str
    # Decode giving up on a transfer on its own (waiting timeout, heartbeats declaring
    # prefill dead) without ABORT to prefill: never, freeing at once (older receivers), or
    # holding the pages like a deferred abort (until ACK or the release timeout).
    decode_gives_up: str
    # -- sharing (issue 12 items 3-4) -- a default, so earlier variant files need no edit.
    # Decode's radix cache (SGLang ``--disaggregation-decode-enable-radix-cache``, #19746)
    # shares read-only prefix pages among requests, locked by reference counts
    # (``_match_prefix_and_lock``: ``inc_lock_ref`` on the matched node). "off": the prefix
    # hit stays abstract (``decode_prefix_cache`` alone); "refcounted": a page inserted into
    # the tree leaves its request's table and returns to the pool only when evicted with no
    # lock (#38355's fix); "free_while_cached": the request's release still frees a page it
    # inserted while the tree maps it (#38319: ``cache_finished_req(is_insert=False)``).
    radix_cache: str = "off"
    # Push: decode's abort reaches prefill (SGLang ``receiver.abort()``: prefill stops and
    # ACKs the drain). False (vLLM NIXL push, 0.34.0): decode tells prefill nothing and
    # frees an aborted request's pages only on its finished_recving, i.e. once prefill's
    # writes completed (v1/core/sched/scheduler.py::finish_requests, #32255).
    abort_notifies_prefill: bool = True

    @property
    def prefill_checksums(self) -> bool:
        """Prefill computes the transfer checksum (#39500: the option on its side)."""
        return self.transfer_checksum in ("both", "prefill_only")

    @property
    def decode_checksums(self) -> bool:
        """Decode compares the transfer checksum at commit (the option on its side)."""
        return self.transfer_checksum in ("both", "decode_only")


@dataclass(frozen=True)
class Sizes:
    """Pool and context sizes in tokens, with the page size."""

    context_len: int
    prefill_pool_tokens: int
    decode_pool_tokens: int
    page_size: int


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str
    version: str
    summary: str
    sources: tuple[str, ...]
    switches: Switches
    deployment: Sizes  # the real deployment's numbers (audit, docs)
    engine_sizes: Sizes  # the same ratios, scaled down for the reference engine
    expect: Mapping[str, str]  # invariant name -> "holds" | "violated"
    counterpart: str | None  # the fixed (or buggy) variant this one pairs with
    path: Path
    # BMC depth that reaches every expected violation (a violation that only follows an
    # earlier one, e.g. a stale read after a stray write, can need a few more steps).
    bmc_depth: int = 12
    # The environment assumptions the verdicts rely on (``spec/assumptions.py``): name ->
    # why they hold for this engine (the bound, the setting), in file order.
    assume: Mapping[str, str] = field(default_factory=dict)
    # ``check --all`` also checks every depth at its size (``check --complete``) for this one.
    complete: bool = False
    # What ``kvproof variants`` marks it as: the incident's release or the recommended one.
    role: str | None = None
    upstream: Upstream | None = None  # which shipped releases it is (``spec/upstream.py``)
    lines: Mapping[str, int] = field(default_factory=dict)  # "expect.isolation" -> line
    # Liveness property -> "holds" | "violated" (optional keys of the [expect] table).
    expect_liveness: Mapping[str, str] = field(default_factory=dict)
    # What ``kvproof demo incident`` shows on this variant at the incident's sizes (its
    # prediction, checked by ``tests/refimpl/test_demo_expect.py``): a leak, a wrong answer,
    # or clean (every 200 the single node's).
    demo: str = "clean"

    @property
    def buggy(self) -> bool:
        return any(v == "violated" for v in self.expect.values())


_TOP_KEYS = {
    "name": str,
    "engine": str,
    "version": str,
    "summary": str,
    "sources": list,
    "counterpart": str,
    "bmc_depth": int,
    "switches": dict,
    "deployment": dict,
    "engine_sizes": dict,
    "expect": dict,
    "assume": dict,
    "complete": bool,
    "role": str,
    "upstream": dict,
    "demo": str,
}
_OPTIONAL = {"counterpart", "bmc_depth", "assume", "complete", "role", "upstream", "demo"}
ROLES = ("incident", "recommended")
DEMO_OUTCOMES = ("leak", "wrong_answer", "clean")

# The invariants a variant's [expect] table must name: kvproof's (None), a fixed set, or a
# function of the parsed switches (a user protocol names its invariants once, in its DSL).
InvariantNames = Collection[str] | Callable[[Any], Collection[str]] | None
# The assumptions a variant's [assume] table may name: kvproof's (None) or a fixed set.
AssumptionNames = Collection[str] | None


def _check_table(data: Mapping[str, Any], cls: type, path: Path, table: str) -> dict[str, Any]:
    want = {f.name: f.type for f in fields(cls)}
    # Keys with a default may be left out (a switch added later: older files stay valid).
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    # A user protocol's switches dataclass lists its enumerated values in ``CHOICES``.
    choices: Mapping[str, tuple[str, ...]] = (
        CHOICES if cls is Switches else getattr(cls, "CHOICES", {})
    )
    for key in data:
        if key not in want:
            hint = did_you_mean(key, want)
            raise KvproofInputError(f"unknown key '{table}.{key}'{hint}", str(path))
    out: dict[str, Any] = {}
    for name, typ in want.items():
        if name not in data:
            if name in defaults:
                out[name] = defaults[name]
                continue
            raise KvproofInputError(f"missing key '{table}.{name}'", str(path))
        value = data[name]
        if typ in ("bool", bool):
            if not isinstance(value, bool):
                raise KvproofInputError(
                    f"'{table}.{name}' must be true or false, got {value!r}", str(path)
                )
        elif typ in ("int", int):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise KvproofInputError(
                    f"'{table}.{name}' must be a positive integer, got {value!r}", str(path)
                )
        elif name in choices and value not in choices[name]:
            allowed = ", ".join(choices[name])
            raise KvproofInputError(
                f"'{table}.{name}' must be one of {allowed}, got {value!r}", str(path)
            )
        out[name] = value
    return out


def _sizes(data: Any, path: Path, table: str) -> Sizes:
    if not isinstance(data, dict):
        raise KvproofInputError(f"'{table}' must be a table", str(path))
    sizes = Sizes(**_check_table(data, Sizes, path, table))
    if sizes.context_len < sizes.page_size:
        raise KvproofInputError(f"'{table}.context_len' is smaller than a page", str(path))
    return sizes


def parse_variant(
    text: str,
    path: Path,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    """Parse and validate one variant file's text.

    ``switches_type`` and ``invariants`` let a user protocol (``--protocol``) have its own
    variants: its own frozen switches dataclass (enumerated values in a ``CHOICES`` class
    attribute) and its own invariant names. The defaults are kvproof's handoff.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KvproofInputError(f"malformed TOML: {exc}", str(path)) from None
    for key in data:
        if key not in _TOP_KEYS:
            raise KvproofInputError(f"unknown key '{key}'{did_you_mean(key, _TOP_KEYS)}", str(path))
    for key, typ in _TOP_KEYS.items():
        if key not in data:
            if key in _OPTIONAL:
                continue
            raise KvproofInputError(f"missing key '{key}'", str(path))
        if typ is bool and not isinstance(data[key], bool):
            got = data[key]
            raise KvproofInputError(f"'{key}' must be true or false, got {got!r}", str(path))
        if not isinstance(data[key], typ):
            raise KvproofInputError(f"'{key}' must be a {typ.__name__}", str(path))
    switches = switches_type(**_check_table(data["switches"], switches_type, path, "switches"))
    if getattr(switches, "radix_cache", "off") != "off" and not switches.decode_prefix_cache:
        raise KvproofInputError(
            "'switches.radix_cache' needs 'switches.decode_prefix_cache = true'", str(path)
        )
    names = _invariant_names(invariants, switches)
    safety, expect_liveness = split_expect(data["expect"], path, VERDICTS)
    expect = check_expect(safety, names, path)
    if data.get("role", ROLES[0]) not in ROLES:
        raise KvproofInputError(
            f"'role' must be one of {', '.join(ROLES)}, got {data['role']!r}", str(path)
        )
    if data.get("demo", "clean") not in DEMO_OUTCOMES:
        raise KvproofInputError(
            f"'demo' must be one of {', '.join(DEMO_OUTCOMES)}, got {data['demo']!r}", str(path)
        )
    sources = data["sources"]
    if not sources or not all(isinstance(s, str) for s in sources):
        raise KvproofInputError("'sources' must be a non-empty list of strings", str(path))
    upstream = parse_upstream(data["upstream"], path, data) if "upstream" in data else None
    return Variant(
        name=data["name"],
        engine=data["engine"],
        version=data["version"],
        summary=data["summary"],
        sources=tuple(sources),
        switches=switches,
        deployment=_sizes(data["deployment"], path, "deployment"),
        engine_sizes=_sizes(data["engine_sizes"], path, "engine_sizes"),
        expect=expect,
        counterpart=data.get("counterpart"),
        path=path,
        bmc_depth=_depth(data.get("bmc_depth", 12), path),
        assume=check_assume(data.get("assume", {}), path, assumptions),
        complete=data.get("complete", False),
        role=data.get("role"),
        upstream=upstream,
        lines=key_lines(text),
        expect_liveness=expect_liveness,
        demo=data.get("demo", "clean"),
    )


def _invariant_names(invariants: InvariantNames, switches: Any) -> tuple[str, ...]:
    if invariants is None:
        return tuple(INVARIANTS)
    if callable(invariants):
        return tuple(invariants(switches))
    return tuple(invariants)


def _depth(value: object, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
        raise KvproofInputError(f"'bmc_depth' must be an integer 1..64, got {value!r}", str(path))
    return value


def load_variant_file(
    path: Path,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    text = read_text(path, "variant")
    variant = parse_variant(text, path, switches_type, invariants, assumptions)
    if variant.name != path.stem:
        raise KvproofInputError(
            f"'name' is {variant.name!r} but the file is named {path.stem!r}", str(path)
        )
    return variant


def list_variants(
    folder: Path = VARIANTS_DIR,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> list[Variant]:
    """Every variant in ``folder``, sorted by name (a folder without any is bad input)."""
    paths = sorted(_folder(folder).glob("*.toml"))
    if not paths:
        raise KvproofInputError("no variant files (*.toml) in this folder", str(folder))
    return [load_variant_file(p, switches_type, invariants, assumptions) for p in paths]


def _folder(folder: Path) -> Path:
    if not folder.exists():
        raise KvproofInputError("no such variants folder", str(folder))
    if not folder.is_dir():
        raise KvproofInputError("variants folder is not a folder", str(folder))
    return folder


def load_variant(
    name_or_path: str,
    folder: Path = VARIANTS_DIR,
    switches_type: type = Switches,
    invariants: InvariantNames = None,
    assumptions: AssumptionNames = None,
) -> Variant:
    """A variant by name (from ``folder``) or by the path of a ``.toml`` file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml":
        if not candidate.exists():
            raise KvproofInputError("no such variant file", name_or_path)
        return load_variant_file(candidate, switches_type, invariants, assumptions)
    path = _folder(folder) / f"{name_or_path}.toml"
    if not path.is_file():
        known = [p.stem for p in sorted(folder.glob("*.toml"))]
        if not known:
            raise KvproofInputError(f"no such variant (no *.toml in {folder})", name_or_path)
        # The nearest names, not all of them on one line: `kvproof variants` lists them.
        where = "" if folder == VARIANTS_DIR else f" --variants-dir {folder}"
        raise KvproofInputError(
            f"no such variant{did_you_mean(name_or_path, known)} "
            f"('kvproof variants{where}' lists them)",
            name_or_path,
        )
    return load_variant_file(path, switches_type, invariants, assumptions)
