"""How long ``kvproof conform --vllm`` takes for 200 walks with the 0.34.0 wheel cached,
import included: issue 40's goal is at most 60 s. Prints one JSON object (a figure, not a
test).

    KVPROOF_VLLM_WHEELS=/path/to/wheels python benchmarks/conform_vllm.py [--trials 3]

Each trial is the whole command in a fresh process (Python and torch imports, loading the
release's modules, compiling the model, the walks), timed from outside, as a user or a CI
job sees it. ``conform_s`` is the run's own clock (from the model's compilation on).
"""

from __future__ import annotations

from conform_timing import bench  # this folder, on the path when run as a script

CASES = (("vllm-0.34-nixl-pull", "0.34.0"), ("vllm-0.34-nixl-push", "0.34.0"))

if __name__ == "__main__":
    raise SystemExit(bench("conform_vllm", 60, "--vllm", CASES, ("walks", "steps", "coverage")))
