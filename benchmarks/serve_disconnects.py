"""Client disconnects at random moments against ``kvproof serve``: does the bug show over HTTP?

The scenario of issue 12 (item 6): ``kvproof serve --variant V --transfer-us-per-page
30000`` in its own process on a loopback port, 32 concurrent clients, each sending
completions back to back with a client timeout drawn uniformly from 20-800 ms (seeded), for
``--seconds``. Client ``i`` is one tenant whose prompts are its own letter repeated
(``--min-prompt`` to ``--max-prompt`` tokens, 16 answer tokens at most), so any other
client's letter in a 200 answer is a foreign canary, read where the client reads it. The
server's own ground truth comes from ``/metrics`` (``kvproof_oracle_*``: stray writes,
stale reads), read once the engine went quiet. Runs the buggy variant and its fixed
counterpart; prints one JSON object.

    python benchmarks/serve_disconnects.py [--seconds 30] [--clients 32] [--seed 0]

Figures depend on the machine's speed (the engine runs on the CPU, timings are wall-clock
simulations): compare the two variants within one run, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import string
import subprocess
import sys
import time
from collections import Counter
from typing import Any

import httpx

VARIANTS = ("sglang-pd-early-free-abort", "sglang-0.5.22-pd")
LETTERS = string.ascii_letters
SERVE = "import sys; from kvproof.checker.cli import main; sys.exit(main())"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metrics(c: httpx.Client) -> dict[str, float]:
    out = {}
    for line in c.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


async def _client(
    c: httpx.AsyncClient, i: int, args: argparse.Namespace, stop: float, tally: Counter[str]
) -> None:
    rng = random.Random(args.seed * 1000 + i)
    own = LETTERS[i]
    others = set(LETTERS[: args.clients]) - {own}
    while time.monotonic() < stop:
        n = rng.randint(args.min_prompt, args.max_prompt)
        body = {"prompt": own * n, "max_tokens": min(n, 16)}
        timeout = rng.uniform(0.020, 0.800)
        tally["requests"] += 1
        try:
            r = await c.post(
                "/v1/completions",
                json=body,
                headers={"Authorization": f"Bearer tenant-{i}"},
                timeout=timeout,
            )
        except httpx.TimeoutException:
            tally["client_disconnects"] += 1
            continue
        tally[f"status_{r.status_code}"] += 1
        if r.status_code == 200:
            text = r.json()["choices"][0]["text"]
            if set(text) & others:
                tally["foreign_canaries"] += 1
            elif text != own * len(text):
                tally["corrupt_answers"] += 1


def run_variant(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-c", SERVE, "serve", "--variant", variant, "--port", str(port)]
    cmd += ["--transfer-us-per-page", str(args.transfer_us_per_page), "--seed", str(args.seed)]
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)  # its warnings go to our stderr
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            deadline = time.monotonic() + 120
            while True:
                try:
                    c.get("/health").raise_for_status()
                    break
                except httpx.TransportError:
                    if srv.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"kvproof serve did not start: {cmd}") from None
                    time.sleep(0.2)
            tally: Counter[str] = Counter()

            async def clients() -> None:
                stop = time.monotonic() + args.seconds
                limits = httpx.Limits(max_connections=2 * args.clients)
                async with httpx.AsyncClient(base_url=url, limits=limits) as ac:
                    await asyncio.gather(
                        *(_client(ac, i, args, stop, tally) for i in range(args.clients))
                    )

            asyncio.run(clients())
            deadline = time.monotonic() + 60  # let aborted requests' late writes land
            while True:
                m = _metrics(c)
                busy = m["kvproof_requests_running"] + m["kvproof_requests_waiting"]
                if busy + m["kvproof_transfers_in_flight"] == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    return {
        **{k: tally[k] for k in ("requests", "client_disconnects", "status_200")},
        "foreign_canaries": tally["foreign_canaries"],
        "corrupt_answers": tally["corrupt_answers"],
        "other_statuses": {k: v for k, v in tally.items() if k.startswith("status_")},
        "server_aborts": int(m.get("kvproof_aborts_total", 0)),
        "stray_writes": int(m["kvproof_oracle_stray_writes_total"]),
        "stale_reads": int(m["kvproof_oracle_stale_reads_total"]),
        "engine_events": int(m["kvproof_engine_events_total"]),
        "quiet_at_end": busy + m["kvproof_transfers_in_flight"] == 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--min-prompt", type=int, default=1)
    ap.add_argument("--max-prompt", type=int, default=300)  # prefill's limit is 330 here
    ap.add_argument("--transfer-us-per-page", type=float, default=30000.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not 0 < args.clients <= len(LETTERS):
        ap.error(f"--clients must be 1..{len(LETTERS)} (one letter per tenant)")
    results = {v: run_variant(v, args) for v in VARIANTS}
    print(
        json.dumps(
            {
                "benchmark": "serve_disconnects",
                "clients": args.clients,
                "client_timeout_ms": [20, 800],
                "seconds": args.seconds,
                "transfer_us_per_page": args.transfer_us_per_page,
                "prefill_us_per_token": 200.0,  # kvproof serve's default
                "prompt_tokens": [args.min_prompt, args.max_prompt],
                "seed": args.seed,
                "variants": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
