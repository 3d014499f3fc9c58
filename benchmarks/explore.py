"""Explicit-state search cost: states, transitions and seconds at growing sizes.

Prints one JSON object. Explicit state is the slow baseline (the Z3 proofs answer for any
size); each run has a time budget, so a size that does not finish reports
``truncated: true`` with the states reached, never an extrapolation.

    .venv/bin/python benchmarks/explore.py [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from kvproof.model.handoff import protocol_of
from kvproof.model.search.explore import explore
from kvproof.spec.variant import load_variant

VARIANTS = ("sglang-0.5.22-pd", "sglang-0.5.19-pd")  # the release to run; the incident's
SIZES = ((3, 4), (4, 6))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=40.0, help="seconds per run")
    parser.add_argument("--max-states", type=int, default=2_000_000, help="states per run")
    args = parser.parse_args()
    start = time.perf_counter()
    runs = []
    for name in VARIANTS:
        protocol = protocol_of(load_variant(name), assumed=False)
        for requests, pages in SIZES:
            r = explore(
                protocol,
                {"Req": requests, "Page": pages},
                variant=name,
                max_states=args.max_states,
                max_seconds=args.budget,
            )
            runs.append(
                {
                    "variant": name,
                    "requests": requests,
                    "pages": pages,
                    "states": r.states,
                    "transitions": r.transitions,
                    "diameter": r.diameter,
                    "seconds": round(r.seconds, 2),
                    "states_per_second": round(r.states / r.seconds),
                    "truncated": r.truncated,
                    "shortest": {i: r.shortest(i) for i in r.invariants},
                    "deadlocks": r.deadlocks,
                    "symmetry": list(r.symmetry),
                }
            )
    print(
        json.dumps(
            {
                "benchmark": "explore",
                "python": platform.python_version(),
                "budget_seconds": args.budget,
                "max_states": args.max_states,
                "runs": runs,
                "total_seconds": round(time.perf_counter() - start, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
