"""Decode throughput of the reference engine with and without guards, and what the guards cost.

Guards = per-page owner tags checked by the guarded decode kernel before every read, plus
the per-transfer Adler-32 checked at commit (SGLang #39500). Plain = sglang-0.5.22-pd.
Both run the same seeded workload (same interleaving, same tokens). Each of the ``--trials``
pairs runs the two engines in lockstep, one scheduler event of each in turn with the first
alternating (ABBA per event), twice (``run_trial``), so drift of a shared, noisy machine hits
both sides alike within milliseconds; each pair gives one overhead figure and the report
gives their median with the spread (min, quartiles, max), never a single best run.

Decode time is the time spent in ``commit`` (checksum + first read) and ``step`` events.
Inside the guarded runs the guard components are timed (or counted) where they run:

* ``tag_check``: the owner-tag compare of the guarded kernel (``tag_mismatch``), run only
  by reads whose pages or tags changed since the request's last passed check;
* ``tag_lookup``: the test that decides it (``PageTags.unchanged``), run by every decode
  read (commit's first read and every step): counted, and priced in a tight loop (a few
  us: a timer around each call would cost more than the call);
* ``adler32``: the decode-side checksum of the received pages, once per transfer.

Those timers cost time themselves, so they run in extra instrumented guarded runs
(``--component-trials``), after every A/B pair the overhead comes from, never among them.
``overhead_in_commits_pct`` and ``overhead_in_steps_pct`` split each pair's difference by
event kind: commits hold the checksum and the one guarded read per request, steps only the
reuse test (and a re-check after a tag write).

``unattributed`` is the median overhead minus ``attributed_total_pct``: what the priced
guard work does not explain, cold caches (the priced figures are warm) plus noise
(``benchmarks/guard_instructions.py`` counts the instructions, README has its findings).

Clock: on CPU the decode thread's CPU time (``time.thread_time``; torch runs one intra-op
thread): wall time also counts other processes' slices, which swung single pairs by +-40%
(``--clock wall`` for it). CUDA: wall time around a device sync.

``step_profile`` isolates the guard from everything else: one running request, decode
steps at the same position every time (no token appended), plain against guarded with the
check forced (ABBA), plain against guarded reusing its check, and the reuse test alone in
a tight loop. ``attributed_pct`` prices the run's lookups, checks and transfers at those
figures; ``aa_control_pct`` runs the same lockstep pairs with the plain engine on both
sides: the noise floor of the method on this machine (a median overhead inside it is not
a measured cost). Prints one JSON object. Goal: guards cost at most 1% of decode tokens/s,
median over the pairs; ``meets_goal`` says yes or no only when the median's 95% confidence
interval (``pair_stats.median_ci``) lies on one side of it: single pairs spread by +-1%
whatever they compare (A/A too); more pairs narrow the interval, not the pairs.

    python benchmarks/engine.py [--device cuda] [--model tiny] [--trials 31] \
        [--aa-trials 15] [--clock cpu] [--guards all|tags]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from pair_stats import GOAL_PCT, median_ci, spread, verdict

import kvproof.kernels.api as kernels_api
from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.scheduler import Scheduler
from kvproof.spec.variant import Variant, load_variant


@dataclasses.dataclass
class Run:
    decode_s: float = 0.0  # time in commit + step events
    commit_s: float = 0.0  # of which in commit events (checksum + first, guarded, read)
    tokens: tuple[tuple[int, ...], ...] = ()
    reads: int = 0  # decode reads (commit's first read + steps)
    tag_check_s: float = 0.0
    tag_checks: int = 0
    tag_lookups: int = 0  # PageTags.unchanged calls: may this read reuse a passed check?
    adler_s: float = 0.0
    transfers: int = 0
    runs: int = 1  # workload runs summed in (``run_trial`` sums two)

    @property
    def decode_s_per_run(self) -> float:
        return self.decode_s / self.runs

    def merged(self, other: Run) -> Run:
        """Both runs' decode times and tokens, as one (``run_trial``'s two orders)."""
        return Run(
            decode_s=self.decode_s + other.decode_s,
            commit_s=self.commit_s + other.commit_s,
            tokens=self.tokens + other.tokens,
            runs=self.runs + other.runs,
        )

    @property
    def decode_tokens(self) -> int:
        return sum(len(t) - 1 for t in self.tokens)  # the first token is prefill's

    @property
    def rate(self) -> float:
        return self.decode_tokens / self.decode_s


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


CLOCK: Callable[[], float] = time.perf_counter  # set by main() from --clock


def prepare(variant: Variant, args: argparse.Namespace, components: bool) -> tuple[Cluster, Run]:
    """A cluster with the workload submitted and its decode events timed into a ``Run``;
    ``components``: also time the guard components (their timers add overhead, so these
    runs are kept out of the A/B). Restore ``kernels_api.tag_mismatch`` after the run."""
    c = Cluster(variant, model=args.model, device=args.device, seed=args.seed)
    h = c.handoff
    run = Run()

    def timed(fn: Callable[..., Any], *fields: str, count: str = "") -> Callable[..., Any]:
        def wrapper(*a: Any, **kw: Any) -> Any:
            _sync(args.device)
            t0 = CLOCK()
            out = fn(*a, **kw)
            _sync(args.device)
            dt = CLOCK() - t0
            for field in fields:
                setattr(run, field, getattr(run, field) + dt)
            if count:
                setattr(run, count, getattr(run, count) + 1)
            return out

        return wrapper

    # the engine's rules for decode's reads (refimpl/rules/generate.py), timed
    for name, fields in (("commit", ("decode_s", "commit_s")), ("step", ("decode_s",))):
        rule = h.rules[name]
        h.rules[name] = dataclasses.replace(rule, effect=timed(rule.effect, *fields))
    original_check = kernels_api.tag_mismatch
    if components:
        h.decode.checksum = timed(h.decode.checksum, "adler_s", count="transfers")  # type: ignore[method-assign]
        step = h.decode.step

        def counted_step(*a: Any, **kw: Any) -> Any:
            run.reads += 1
            return step(*a, **kw)

        h.decode.step = counted_step  # type: ignore[method-assign]
        tags = h.decode.tags
        unchanged = tags.unchanged

        def counted_lookup(*a: Any, **kw: Any) -> Any:  # counted, priced by step_profile
            run.tag_lookups += 1
            return unchanged(*a, **kw)

        tags.unchanged = counted_lookup  # type: ignore[method-assign]
        kernels_api.tag_mismatch = timed(original_check, "tag_check_s", count="tag_checks")
    rng = random.Random(args.seed)
    p_max = c.limits[0].max_req_input_len
    for i in range(args.requests):
        n = rng.randint(p_max // 2, p_max)
        c.submit(f"t{i}", [rng.randrange(1, 256) for _ in range(n)], args.new_tokens)
    return c, run


def _finish(c: Cluster, run: Run) -> Run:
    responses = [c.response(r.rid) for r in c.requests]
    assert all(r.status == 200 for r in responses), [r.reason for r in responses]
    run.tokens = tuple(r.tokens for r in responses)
    return run


def run_once(variant: Variant, args: argparse.Namespace, *, components: bool = False) -> Run:
    """One run of the workload on its own."""
    original_check = kernels_api.tag_mismatch
    try:
        c, run = prepare(variant, args, components)
        c.run()
    finally:
        kernels_api.tag_mismatch = original_check
    return _finish(c, run)


def run_pair(
    plain: Variant,
    guarded: Variant,
    args: argparse.Namespace,
    flip: bool = False,
    guarded_leads: bool = False,
) -> tuple[Run, Run]:
    """Both engines through the same workload in lockstep: one scheduler step of each in
    turn, the first alternating step by step (ABBA at the granularity of one event), so
    the load of a shared machine hits both alike within milliseconds, not seconds. Same
    seed, same schedule: the guards change no event (asserted: same tokens). ``flip``:
    build the guarded engine first (alternated by the caller: which engine's tensors are
    allocated first measurably mattered). ``guarded_leads``: see ``run_trial``."""
    if flip:
        (cg, rg), (cp, rp) = prepare(guarded, args, False), prepare(plain, args, False)
    else:
        (cp, rp), (cg, rg) = prepare(plain, args, False), prepare(guarded, args, False)
    sp, sg = Scheduler(cp), Scheduler(cg)
    live = [True, True]
    i = int(guarded_leads)
    while any(live):
        order = ((0, sp), (1, sg)) if i % 2 == 0 else ((1, sg), (0, sp))
        for k, sched in order:
            if live[k]:
                live[k] = sched.step()
        i += 1
    return _finish(cp, rp), _finish(cg, rg)


def run_trial(
    plain: Variant, guarded: Variant, args: argparse.Namespace, flip: bool
) -> tuple[Run, Run]:
    """One pair = two lockstep runs, each engine taking the even steps' first turn in one
    of them, summed. Which engine moves first on even steps biased a single run by ~1%
    (A/A pairs: +1.07% median one way, -0.92% the other): the scheduler's decode events
    fall on one parity more often than the other, and going first or second after the
    same event of the twin engine is not the same (caches, branch predictors). Alternating
    it across pairs left each pair biased; summing both orders cancels it in each pair."""
    p1, g1 = run_pair(plain, guarded, args, flip, guarded_leads=False)
    p2, g2 = run_pair(plain, guarded, args, flip, guarded_leads=True)
    assert p1.tokens == g1.tokens and p2.tokens == g2.tokens, "guards changed the tokens"
    return p1.merged(p2), g1.merged(g2)


def step_profile(args: argparse.Namespace, samples: int) -> dict[str, float]:
    """The guard's unit costs with nothing else varying (see the module docstring)."""
    c = Cluster(load_variant("sglang-0.5.22-pd-guarded"), model=args.model, device=args.device)
    n = c.limits[0].max_req_input_len * 3 // 4  # the workload's mean prompt
    rid = c.submit("p", [1 + i % 200 for i in range(n)], 10**6)
    while c.status(rid).decode != "running":
        names = ("abort", "fail", "p_abort", "give_up")  # the happy path only
        c.apply(next(e for e in c.enabled() if e.rid == rid and e.name not in names))
    d, dec = c.handoff.flights[rid].d, c.decode

    def step(kind: str) -> float:
        if kind == "check":
            dec.tags.invalidate(rid)  # no passed check to reuse: the guarded kernel runs
        _sync(args.device)
        t0 = CLOCK()
        token = dec.step(d, guarded=kind != "plain")
        _sync(args.device)
        assert token is not None
        return CLOCK() - t0

    def abba(a: str, b: str) -> tuple[float, float]:
        """Median step time of ``a`` and ``b``, alternating a b b a (nothing else between)."""
        times: dict[str, list[float]] = {a: [], b: []}
        for _ in range(10):
            step(a), step(b)
        for i in range(samples):
            for k in (a, b) if i % 2 == 0 else (b, a):
                times[k].append(step(k))
        return statistics.median(times[a]), statistics.median(times[b])

    plain, check = abba("plain", "check")
    plain2, cached = abba("plain", "cached")
    # The cache test alone, in a tight loop: a few us, below a step's noise.
    pages = d.table + d.tail
    read = pages[: (d.read_len + len(d.tokens) - 1) // dec.page_size + 1]
    assert dec.tags.unchanged(rid, read)
    reps = 20 * samples
    t0 = CLOCK()
    for _ in range(reps):
        dec.tags.unchanged(rid, read)
    lookup = (CLOCK() - t0) / reps
    return {
        "samples": samples,
        "plain_us_per_read": round(1e6 * plain, 1),
        # the whole guarded read minus the plain one: guard setup, the tag check, the
        # masked attention, the host sync on the error flag (the figure on the kernel alone)
        "check_us_per_check": round(1e6 * (check - plain), 1),
        "check_pct_of_read": round(100 * (check / plain - 1), 2),
        # a read that reuses its passed check, minus a plain one (noise-bound: compare
        # with lookup_us, the same difference timed in a loop)
        "cached_read_extra_us": round(1e6 * (cached - plain2), 1),
        "lookup_us": round(1e6 * lookup, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="tiny", choices=["tiny", "echo"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--trials", type=int, default=31, help="plain/guarded pairs (ABBA order)")
    ap.add_argument("--component-trials", type=int, default=5, help="instrumented runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--clock", choices=["cpu", "wall"], default=None, help="default: cpu on CPU")
    ap.add_argument("--profile-samples", type=int, default=300, help="step_profile steps")
    ap.add_argument("--aa-trials", type=int, default=15, help="plain/plain control pairs")
    ap.add_argument(
        "--guards",
        choices=["all", "tags"],
        default="all",
        help="tags: the owner-tag guard alone (no transfer checksum)",
    )
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny models: intra-op threads only add wake-up latency
    global CLOCK
    clock = args.clock or ("wall" if args.device.startswith("cuda") else "cpu")
    CLOCK = time.thread_time if clock == "cpu" else time.perf_counter
    plain = load_variant("sglang-0.5.22-pd")
    checksum = "both" if args.guards == "all" else "off"
    sw = dataclasses.replace(plain.switches, page_tags=True, transfer_checksum=checksum)
    guarded = dataclasses.replace(plain, name="sglang-0.5.22-pd+guards", switches=sw)
    run_once(plain, args)  # warm-up (allocator, kernels, caches)
    run_once(guarded, args)
    pairs: list[tuple[Run, Run]] = []
    control: list[tuple[Run, Run]] = []  # the method's noise floor: plain on both sides
    for trial in range(max(args.trials, args.aa_trials)):
        if trial < args.aa_trials:  # interleaved with the A/B pairs: the same drift
            control.append(run_trial(plain, plain, args, flip=trial % 2 == 1))
        if trial >= args.trials:
            continue
        pairs.append(run_trial(plain, guarded, args, flip=trial % 2 == 1))
    # The instrumented runs come after every pair, so no pair runs next to their timers.
    parts = [run_once(guarded, args, components=True) for _ in range(args.component_trials)]
    overhead = [100.0 * (1.0 - g.rate / p.rate) for p, g in pairs]
    ci = median_ci(overhead)
    aa = [100.0 * (1.0 - b.rate / a.rate) for a, b in control]
    # The overhead split by event kind: commits (checksum, the guarded first read) and steps
    # (the reuse test, the rare re-check). Same tokens on both sides: the overhead is
    # (g - p) / g of the decode times, so the commits' share is over g and steps' the rest.
    in_commits = [100.0 * (g.commit_s - p.commit_s) / g.decode_s for p, g in pairs]
    in_steps = [o - c for o, c in zip(overhead, in_commits, strict=True)]
    med = statistics.median
    # Components, as a share of the median plain decode time of one run (a pair sums two
    # runs, an instrumented run is one).
    plain_s = med([p.decode_s_per_run for p, _ in pairs])
    tag_share = [100.0 * g.tag_check_s / plain_s for g in parts]
    adler_share = [100.0 * g.adler_s / plain_s for g in parts]
    g0 = parts[0]
    prof = step_profile(args, args.profile_samples)
    adler_s = med([g.adler_s / max(1, g.transfers) for g in parts])
    # Every guard cost of a run, priced: lookups at the tight-loop figure, each check at
    # the whole guarded read's extra (setup + tag check + masked attention), Adler-32 at
    # its timed cost.
    attributed = {
        "lookups": g0.tag_lookups * prof["lookup_us"] * 1e-6,
        "checks": g0.tag_checks * prof["check_us_per_check"] * 1e-6,
        "adler32": g0.transfers * adler_s,
    }
    attributed_pct = {k: round(100 * v / plain_s, 3) for k, v in attributed.items()}
    total_pct = round(100 * sum(attributed.values()) / plain_s, 2)
    result = {
        "benchmark": "engine_decode_guards",
        "model": args.model,
        "device": args.device,
        "clock": clock,
        "torch_threads": torch.get_num_threads(),
        "requests": args.requests,
        "decode_tokens_per_run": g0.decode_tokens,
        "decode_reads_per_run": g0.reads,
        "transfers_per_run": g0.transfers,
        "trials": args.trials,
        "component_trials": len(parts),
        "order": "lockstep ABBA per event, both parities per pair, build order alternating",
        "plain_tokens_per_s": spread([p.rate for p, _ in pairs], 1),
        "guarded_tokens_per_s": spread([g.rate for _, g in pairs], 1),
        "guard_overhead_pct": spread(overhead),
        "overhead_in_commits_pct": spread(in_commits),
        "overhead_in_steps_pct": spread(in_steps),
        "components": {
            "tag_check": {
                "us_per_check": spread([1e6 * g.tag_check_s / max(1, g.tag_checks) for g in parts]),
                "checks_per_run": g0.tag_checks,
                "share_of_plain_decode_pct": spread(tag_share),
            },
            "tag_lookup": {
                "us_per_lookup": prof["lookup_us"],
                "lookups_per_run": g0.tag_lookups,
            },
            "adler32": {
                "ms_per_transfer": spread(
                    [1e3 * g.adler_s / max(1, g.transfers) for g in parts], 3
                ),
                "transfers_per_run": g0.transfers,
                "share_of_plain_decode_pct": spread(adler_share),
            },
            "attributed_pct": attributed_pct,
            "attributed_total_pct": total_pct,
            "unattributed_pct": round(med(overhead) - total_pct, 2),
        },
        "step_profile": prof,
        "aa_control_pct": spread(aa) if aa else None,
        "goal_pct": GOAL_PCT,
        "guard_overhead_median_ci95_pct": [round(x, 2) for x in ci],
        "meets_goal": verdict(ci),
        "guards": ["page_tags (guarded decode kernel)"]
        + (["transfer_checksum (Adler-32)"] if args.guards == "all" else []),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
