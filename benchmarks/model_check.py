"""Model-checking figures, printed as one JSON object.

- seconds to the incident counterexample, as a whole ``kvproof check`` process;
- BMC of the fixed variant to depth 12 at 3 requests / 6 pages (whole process);
- unbounded proof time of each fixed variant (in process, solver only);
- explicit-state exploration (when model/explore.py is present): states and seconds.

Usage: python benchmarks/model_check.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def whole_process(*args: str) -> dict[str, object]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kvproof", *args], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    out: dict[str, object] = {
        "command": "kvproof " + " ".join(args),
        "exit": proc.returncode,
        "seconds": round(seconds, 3),
    }
    try:
        data = json.loads(proc.stdout)
        out["verdict"] = data["verdict"]
        out["lengths"] = {
            i["name"]: i.get("shortest") for i in data["invariants"] if i["verdict"] == "violated"
        }
    except (ValueError, KeyError, TypeError):
        out["stderr"] = proc.stderr[-300:]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the exploration figures")
    parser.add_argument(
        "--inference", action="store_true", help="inference, complete checking (model/infer.py)"
    )
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per inference run")
    args = parser.parse_args()
    result: dict[str, object] = {"benchmark": "model_check"}
    result["python_startup_s"] = round(_python_startup(), 3)
    result["incident_counterexample"] = whole_process(
        "check", "sglang-0.5.19-pd", "--invariant", "isolation", "--json"
    )
    result["incident_all_invariants_depth12"] = whole_process(
        "check", "sglang-0.5.19-pd", "--depth", "12", "--json"
    )
    result["fixed_bmc_depth12_3req_6pages"] = whole_process(
        "check", "sglang-0.5.22-pd", "--depth", "12", "--json", "--no-necessity"
    )
    from kvproof.model.assumptions import handoff_for
    from kvproof.model.induction import prove
    from kvproof.spec.variant import list_variants

    proofs = {}
    for v in list_variants():
        if v.buggy:
            continue
        r = prove(handoff_for(v))  # under the variant's assumptions
        proofs[v.name] = {
            "proved": r.proved,
            "seconds": round(r.seconds, 3),
            "queries": r.queries,
            "assumptions": list(v.assume),
        }
    result["proofs"] = proofs
    if not args.quick:
        result["explore"] = _explore()
    if args.inference:
        result["inference"] = _inference(args.budget)
    print(json.dumps(result, indent=2))


def _inference(budget: float) -> object:
    """Inference + proof per fixed variant (hand-written strengthening unused); complete
    checking of the fixed variant at 3 requests / 4 pages against explore on the same
    instance under the same budget; the deep-bug example's shortest counterexample."""
    from pathlib import Path

    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.complete import check_complete
    from kvproof.model.explore import explore
    from kvproof.model.handoff import build_handoff
    from kvproof.model.infer import infer
    from kvproof.spec.variant import list_variants, load_variant

    out: dict[str, object] = {}
    runs = {}
    for v in list_variants():
        if v.buggy:
            continue
        r = infer(build_handoff(v.switches), budget_s=budget)
        runs[v.name] = {**r.to_json(), "inferred": len(r.inferred)}
    out["infer_fixed"] = runs
    fixed = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    sizes = {"Req": 3, "Page": 4}
    c = check_complete(fixed, sizes, budget_s=budget)
    e = explore(fixed, sizes, max_seconds=budget)
    out["complete_3req_4pages"] = {
        "complete": c.to_json(),
        "explore": {"states": e.states, "truncated": e.truncated, "seconds": round(e.seconds, 2)},
    }
    spec = str(Path("examples/deep_bug/pipeline.py").resolve()) + ":Pipeline"
    user = load_protocol(spec)
    (variant,) = resolve_variants(["release-early"], False, None, user)
    deep = check_complete(user.factory(variant.switches), sizes, budget_s=budget)
    out["deep_bug_3req_4pages"] = deep.to_json()
    return out


def _python_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def _explore() -> object:
    try:
        from kvproof.model import explore as ex  # noqa: F401
    except ImportError:
        return "model/explore.py not present"
    proc = subprocess.run(
        [sys.executable, "benchmarks/explore.py"], capture_output=True, text=True, check=False
    )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"error": proc.stderr[-300:]}


if __name__ == "__main__":
    main()
