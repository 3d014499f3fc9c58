"""How long ``kvproof conform`` takes with the wheel cached, with its defaults (faults on,
walks guided to cover the model), and the coverage it reaches: issue 39's goal is at most
10 s for ``--traces 200`` and at least 90% of the reachable abstract transitions. Prints
one JSON object (a figure, not a test).

    python benchmarks/conform.py [--trials 3] [--traces 200]

Each trial is the whole command in a fresh process (imports, loading the release's modules,
the walks), timed from outside, as a user or a CI job sees it.
"""

from __future__ import annotations

from conform_timing import bench  # this folder, on the path when run as a script

CASES = (("sglang-0.5.19-pd", "0.5.19"), ("sglang-0.5.22-pd", "0.5.22"))
KEYS = ("steps", "coverage", "trivial_walks")  # what each case reports of the run's JSON

if __name__ == "__main__":
    raise SystemExit(bench("conform", 10, "--sglang", CASES, KEYS))
