"""HTTP serving throughput of the fixed variant under 32 concurrent clients, guards on/off.

Guards on = ``sglang-0.5.22-pd-guarded`` (per-page owner tags checked before every decode
read, per-transfer Adler-32 and the written-length check at commit); off = ``sglang-0.5.22-pd``.
Each trial starts a fresh in-process server on a loopback port and runs 32 clients, each
sending ``--per-client`` completions back to back; trials alternate off/on so that machine
noise hits both alike. Simulated prefill/RDMA timings are 0 (``--prefill-us-per-token`` to
change): the figure is the engine's and server's own cost. Prints one JSON object.
Goal: guards cost at most 1% throughput.

    python benchmarks/serve.py [--clients 32] [--per-client 4] [--trials 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx
import torch

from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.server import BackgroundServer

VARIANTS = {"off": "sglang-0.5.22-pd", "on": "sglang-0.5.22-pd-guarded"}


async def _client(c: httpx.AsyncClient, i: int, n: int, lat: list[float]) -> int:
    ok = 0
    for j in range(n):
        body = {"prompt": f"client {i} request {j}: " + "z" * (24 + i % 16), "max_tokens": 16}
        t0 = time.perf_counter()
        r = await c.post("/v1/completions", json=body, headers={"Authorization": f"Bearer k{i}"})
        lat.append(time.perf_counter() - t0)
        ok += r.status_code == 200
    return ok


def trial(variant: str, args: argparse.Namespace) -> dict[str, float]:
    cfg = ServeConfig.for_variant(
        variant, prefill_us_per_token=args.prefill_us_per_token, transfer_us_per_page=0
    )
    lat: list[float] = []

    async def main() -> int:
        limits = httpx.Limits(max_connections=args.clients * 2)
        async with httpx.AsyncClient(base_url=srv.url, timeout=120, limits=limits) as c:
            await c.post(
                "/v1/completions",
                json={"prompt": "warm up", "max_tokens": 2},
                headers={"Authorization": "Bearer warm"},
            )
            t0 = time.perf_counter()
            oks = await asyncio.gather(
                *(_client(c, i, args.per_client, lat) for i in range(args.clients))
            )
            main.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
            return sum(oks)

    with BackgroundServer(cfg) as srv:
        ok = asyncio.run(main())
        trips = srv.runner.stats().guard_trips
    lat.sort()
    return {
        "requests": len(lat),
        "ok": ok,
        "rps": len(lat) / main.elapsed,  # type: ignore[attr-defined]
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "guard_trips": trips,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--per-client", type=int, default=4)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--prefill-us-per-token", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for _ in range(args.trials):
        for guards, variant in VARIANTS.items():
            runs[guards].append(trial(variant, args))

    def summary(rs: list[dict[str, float]]) -> dict[str, float]:
        return {
            "rps_median": statistics.median(r["rps"] for r in rs),
            "rps_trials": [round(r["rps"], 2) for r in rs],
            "p50_ms_median": statistics.median(r["p50_ms"] for r in rs),
            "p99_ms_median": statistics.median(r["p99_ms"] for r in rs),
            "lost_requests": sum(r["requests"] - r["ok"] for r in rs),
            "guard_trips": sum(r["guard_trips"] for r in rs),
        }

    off, on = summary(runs["off"]), summary(runs["on"])
    ratio = on["rps_median"] / off["rps_median"]
    # Trial-to-trial spread of the unguarded runs: a cost smaller than this is not resolved.
    noise = (max(off["rps_trials"]) - min(off["rps_trials"])) / off["rps_median"]
    cost = 1 - ratio
    print(
        json.dumps(
            {
                "benchmark": "serve",
                "clients": args.clients,
                "requests_per_trial": args.clients * args.per_client,
                "trials": args.trials,
                "simulated_prefill_us_per_token": args.prefill_us_per_token,
                "guards_off": {"variant": VARIANTS["off"], **off},
                "guards_on": {"variant": VARIANTS["on"], **on},
                "throughput_ratio_on_over_off": round(ratio, 4),
                "guard_cost_pct": round(100 * cost, 2),
                "noise_pct_guards_off_trials": round(100 * noise, 2),
                "goal_cost_pct_at_most": 1.0,
                # None: the noise is larger than the 1% to resolve; rerun with more trials.
                "goal_met": (cost <= 0.01) if noise <= 0.01 else None,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
