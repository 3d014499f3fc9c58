"""Decode throughput of the reference engine with and without guards, in one run.

Guards = per-page owner tags checked by the guarded decode kernel before every read, plus
the per-transfer Adler-32 checked at commit (SGLang #39500). Plain = sglang-0.5.22-pd.
Both run the same seeded workload (same interleaving), alternating A/B over several trials;
decode time is the time spent in ``commit`` (checksum + first read) and ``step`` events.
Prints one JSON object. Goal: guards cost at most 1% of decode tokens/s.

    python benchmarks/engine.py [--device cuda] [--model tiny] [--trials 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import time

import torch

from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Variant, load_variant


def decode_rate(variant: Variant, args: argparse.Namespace) -> tuple[float, int]:
    """(decode tokens/s, tokens) for one run of the workload."""
    c = Cluster(variant, model=args.model, device=args.device, seed=args.seed)
    h = c.handoff
    spent = [0.0]

    def timed(fn):  # type: ignore[no-untyped-def]
        def wrapper(ev):  # type: ignore[no-untyped-def]
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(ev)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            spent[0] += time.perf_counter() - t0

        return wrapper

    h._do_commit = timed(h._do_commit)  # type: ignore[method-assign]
    h._do_step = timed(h._do_step)  # type: ignore[method-assign]
    rng = random.Random(args.seed)
    p_max = c.limits[0].max_req_input_len
    for i in range(args.requests):
        n = rng.randint(p_max // 2, p_max)
        c.submit(f"t{i}", [rng.randrange(1, 256) for _ in range(n)], args.new_tokens)
    c.run()
    tokens = sum(len(c.response(r.rid).tokens) - 1 for r in c.requests)  # first is prefill's
    assert all(c.response(r.rid).status == 200 for r in c.requests)
    return tokens / spent[0], tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny", choices=["tiny", "echo"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--trials", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny models: intra-op threads only add wake-up latency
    plain = load_variant("sglang-0.5.22-pd")
    sw = dataclasses.replace(plain.switches, page_tags=True, transfer_checksum=True)
    guarded = dataclasses.replace(plain, name="sglang-0.5.22-pd+guards", switches=sw)
    decode_rate(plain, args)  # warm-up (allocator, kernels, caches)
    rates: dict[str, list[float]] = {"plain": [], "guarded": []}
    tokens = 0
    for trial in range(args.trials):
        order = [("plain", plain), ("guarded", guarded)]
        for label, v in order if trial % 2 == 0 else order[::-1]:
            rate, tokens = decode_rate(v, args)
            rates[label].append(rate)
    ratios = [g / p for g, p in zip(rates["guarded"], rates["plain"], strict=True)]
    overhead = 100.0 * (1.0 - statistics.median(ratios))
    print(
        json.dumps(
            {
                "benchmark": "engine_decode_guards",
                "model": args.model,
                "device": args.device,
                "requests": args.requests,
                "decode_tokens_per_run": tokens,
                "trials": args.trials,
                "plain_tokens_per_s": round(statistics.median(rates["plain"]), 1),
                "guarded_tokens_per_s": round(statistics.median(rates["guarded"]), 1),
                "guard_overhead_pct": round(overhead, 2),
                "goal_pct": 1.0,
                "meets_goal": overhead <= 1.0,
                "guards": ["page_tags (guarded decode kernel)", "transfer_checksum (Adler-32)"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
