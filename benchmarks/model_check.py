"""Model-checking figures, printed as one JSON object.

- seconds to the incident counterexample, as a whole ``kvproof check`` process;
- BMC of the fixed variant to depth 12 at 3 requests / 6 pages (whole process);
- unbounded proof time of each fixed variant (in process, solver only);
- ``check --liveness`` (issue #29) of v0.5.22 (holds under transfer_eventually_ends) and of
  the quarantine (a lasso), each as a whole process: exit code, verdicts, states, seconds;
- explicit-state exploration (when model/search/explore.py is present): states and seconds;
- ``--complete``: ``check --complete`` of the fixed variant at 3 requests / 4 pages against
  ``explore`` on the same instance under a time cap (states reached), the finite methods
  alone (no proof), and the time to a shortest counterexample that needs depth 14 (BMC with
  and without the settled-depth lemmas, in one run so the ratio is fair).

- ``--spin``: SPIN against kvproof in one run, alternated over ``--rounds`` rounds (SPIN
  first in odd rounds): SPIN's BFS pipeline on ``promela/incident_3x4.pml`` against
  ``kvproof check sglang-0.5.19-pd``, SPIN's exhaustive DFS on ``promela/fixed_3x4.pml``
  (capped at ``--spin-cap`` s) against ``kvproof check vllm-nixl-push-fixed --complete
  --requests 3 --pages 4 --no-prove``, both whole processes; ratios are kvproof / SPIN
  (for a capped SPIN run a lower bound of SPIN's time, so the ratio is an upper bound);
- ``--witness``: the radix witness search of the corpus (``checker/traces/corpus.py``) in
  a fresh process: seconds and peak resident memory.

Usage: python benchmarks/model_check.py [--quick] [--complete [--explore-cap S]]
       python benchmarks/model_check.py --quick --spin [--rounds 3] [--spin-cap S] --witness
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


def liveness_process(variant: str) -> dict[str, object]:
    """``kvproof check VARIANT --liveness --json`` as a whole process."""
    start = time.perf_counter()
    args = ("check", variant, "--liveness", "--json")
    proc = subprocess.run(
        [sys.executable, "-m", "kvproof", *args], capture_output=True, text=True, check=False
    )
    out: dict[str, object] = {
        "command": "kvproof " + " ".join(args),
        "exit": proc.returncode,
        "seconds": round(time.perf_counter() - start, 3),
    }
    try:
        data = json.loads(proc.stdout)["liveness"]
        out["verdicts"] = {p["name"]: p["verdict"] for p in data["properties"]}
        out["states"] = data["states"]
        out["search_seconds"] = data["seconds"]
        out["sizes"] = data["sizes"]
    except (ValueError, KeyError, TypeError):
        out["stderr"] = proc.stderr[-300:]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the exploration figures")
    parser.add_argument(
        "--inference",
        action="store_true",
        help="inference, complete checking (model/search/infer.py)",
    )
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per inference run")
    parser.add_argument(
        "--complete", action="store_true", help="complete checking and deep BMC figures"
    )
    parser.add_argument(
        "--explore-cap", type=float, default=60.0, help="seconds for explore's comparison run"
    )
    parser.add_argument("--spin", action="store_true", help="SPIN against kvproof (3x4)")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds for --spin")
    parser.add_argument("--spin-cap", type=float, default=120.0, help="cap of SPIN's DFS (s)")
    parser.add_argument("--witness", action="store_true", help="the radix witness search")
    parser.add_argument("--only", action="store_true", help="only --spin/--witness figures")
    args = parser.parse_args()
    result: dict[str, object] = {"benchmark": "model_check"}
    result["python_startup_s"] = round(_python_startup(), 3)
    if args.witness:  # first: its peak RSS is the largest child's so far
        result["radix_witness"] = _witness()
    if args.spin:
        result["spin"] = _spin(args.rounds, args.spin_cap)
    if args.only:
        print(json.dumps(result, indent=2))
        return
    result["incident_counterexample"] = whole_process(
        "check", "sglang-0.5.19-pd", "--invariant", "isolation", "--json"
    )
    result["incident_all_invariants_depth12"] = whole_process(
        "check", "sglang-0.5.19-pd", "--depth", "12", "--json"
    )
    result["fixed_bmc_depth12_3req_6pages"] = whole_process(
        "check", "sglang-0.5.22-pd", "--depth", "12", "--json", "--no-necessity"
    )
    result["liveness"] = {
        name: liveness_process(name) for name in ("sglang-0.5.22-pd", "sglang-pd-quarantine")
    }
    from kvproof.model.handoff import protocol_of
    from kvproof.model.search.induction import prove
    from kvproof.spec.variant import list_variants

    proofs = {}
    for v in list_variants():
        if v.buggy:
            continue
        r = prove(protocol_of(v))  # under the variant's assumptions
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
    if args.complete:
        result["complete"] = _complete(args.explore_cap)
        result["deep_counterexample"] = _deep_counterexample()
    print(json.dumps(result, indent=2))


def _spin(rounds: int, cap_s: float) -> object:
    """SPIN and kvproof on the same 3x4 models, alternated; medians and ratios."""
    import os
    import statistics

    from spin_run import run_spin, spin_available

    if not spin_available():
        return "spin or gcc not on PATH"
    incident = ["check", "sglang-0.5.19-pd", "--json"]
    fixed = "vllm-nixl-push-fixed"
    complete = [
        *("check", fixed, "--complete", "--requests", "3", "--pages", "4", "--no-prove"),
        "--json",
    ]
    runs: dict[str, list[dict[str, object]]] = {k: [] for k in ("si", "ki", "sf", "kf")}
    for n in range(rounds):
        jobs = [
            ("si", lambda: run_spin("incident_3x4.pml", bfs=True, cap_s=cap_s)),
            ("ki", lambda: whole_process(*incident)),
            ("sf", lambda: run_spin("fixed_3x4.pml", bfs=False, cap_s=cap_s)),
            ("kf", lambda: _timed_json(complete, _complete_part)),
        ]
        order = jobs if n % 2 == 0 else [jobs[1], jobs[0], jobs[3], jobs[2]]
        for key, job in order:
            runs[key].append(job())

    def median(key: str) -> float:
        return statistics.median(float(r["seconds"]) for r in runs[key])  # type: ignore[arg-type]

    return {
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
        "rounds": rounds,
        "incident": {
            "spin_bfs": runs["si"][-1],
            "kvproof": runs["ki"][-1],
            "spin_s": [r["seconds"] for r in runs["si"]],
            "kvproof_s": [r["seconds"] for r in runs["ki"]],
            "ratio_kvproof_over_spin": round(median("ki") / median("si"), 2),
        },
        "fixed_complete": {
            "spin_dfs": runs["sf"][-1],
            "kvproof": runs["kf"][-1],
            "spin_s": [r["seconds"] for r in runs["sf"]],
            "kvproof_s": [r["seconds"] for r in runs["kf"]],
            "ratio_kvproof_over_spin": round(median("kf") / median("sf"), 2),
            "spin_finished": all(r["finished"] for r in runs["sf"]),
        },
    }


def _complete_part(data: dict) -> object:
    """What settled the complete search, and its own seconds (BMC runs before it)."""
    done = data.get("complete", {})
    return {
        "verdict": done.get("verdict"),
        "method": done.get("method"),
        "complete_s": done.get("seconds"),
        "bmc_s": data.get("seconds"),
        "states": done.get("states"),
    }


def _witness() -> object:
    """The corpus's radix witness search in a fresh process: seconds, peak RSS."""
    import resource

    code = (
        "from kvproof.checker.traces.corpus import WITNESSES as W\n"
        "from kvproof.model.handoff import protocol_of\n"
        "from kvproof.spec.variant import load_variant\n"
        "import time\n"
        "w = W[0]\n"
        "t = time.perf_counter()\n"
        "trace = w.find(protocol_of(load_variant(w.variant)))\n"
        "print(len(trace.steps), round(time.perf_counter() - t, 3))\n"
    )
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, largest child
    try:
        steps, search_s = proc.stdout.split()
    except ValueError:
        return {"error": proc.stderr[-300:]}
    return {
        "variant": "sglang-pd-decode-radix-race",
        "steps": int(steps),
        "search_s": float(search_s),
        "process_s": round(seconds, 3),
        "peak_rss_mb": round(peak / 1024, 1),
    }


def _inference(budget: float) -> object:
    """Inference + proof per fixed variant (hand-written strengthening unused); complete
    checking of the fixed variant at 3 requests / 4 pages against explore on the same
    instance under the same budget; the deep-bug example's shortest counterexample."""
    from pathlib import Path

    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff import protocol_of
    from kvproof.model.search.complete import check_complete
    from kvproof.model.search.explore import explore
    from kvproof.spec.variant import load_variant

    out: dict[str, object] = {}
    out["infer_fixed"] = _infer_fixed(budget)
    # Under the variant's assumptions, as ``kvproof check`` runs it (without
    # ``bounded_transfer`` it is violated at 7 steps: ``check --without``).
    fixed = protocol_of(load_variant("sglang-0.5.22-pd"))
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


def _infer_fixed(budget: float) -> dict[str, object]:
    """``prove --infer`` as a library call on every fixed variant (under its assumptions,
    as the CLI proves it) and on the two example protocols, next to the hand-written
    strengthening's proof in the same process: the ratio is the figure to compare across
    machines, the seconds depend on the box and its load (``load_avg``)."""
    import os
    from pathlib import Path

    from kvproof.checker.verify.protocols import load_protocol, protocol_for, resolve_variants
    from kvproof.model.handoff import protocol_of
    from kvproof.model.search.induction import prove
    from kvproof.model.search.infer import infer
    from kvproof.spec.variant import list_variants

    targets = [(v.name, protocol_of(v)) for v in list_variants() if not v.buggy]
    for spec, name in (
        ("examples/custom_protocol/my_handoff.py:Handoff", "deferred-ack"),
        ("examples/deep_bug/pipeline.py:Pipeline", "release-waits"),
    ):
        path, attr = spec.split(":")
        user = load_protocol(f"{Path(path).resolve()}:{attr}")
        (variant,) = resolve_variants([name], False, None, user)
        targets.append((f"{path.split('/')[1]}:{name}", protocol_for(variant, user.factory)))
    runs: dict[str, object] = {"cpus": os.cpu_count(), "load_avg": os.getloadavg()[0]}
    for name, protocol in targets:
        r = infer(protocol, budget_s=budget)
        row: dict[str, object] = {
            "proved": r.proved,
            "seconds": round(r.seconds, 2),
            "inferred": len(r.inferred),
            "candidates": r.candidates,
            "sample_states": r.sample_states,
            "queries": r.queries,
            "timeline": {k: round(v, 2) for k, v in r.timeline.items()},
        }
        if protocol.strengthening:
            hand = prove(protocol)
            row["hand_written_proof_s"] = round(hand.seconds, 2)
            row["hand_written_conjuncts"] = len(protocol.strengthening)
            row["ratio_to_hand_written"] = round(r.seconds / hand.seconds, 1)
        runs[name] = row
    return runs


def _complete(explore_cap: float) -> object:
    """``check --complete`` of the fixed variant (under its assumptions) at 3 Req / 4 Page,
    as a whole process and in process; the finite methods alone (proof off); ``explore`` on
    the same instance for ``explore_cap`` seconds (it does not finish: states reached)."""
    from kvproof.model.handoff import protocol_of
    from kvproof.model.search.complete import check_complete
    from kvproof.model.search.explore import explore
    from kvproof.spec.variant import load_variant

    name = "sglang-0.5.22-pd"
    fixed = protocol_of(load_variant(name))
    sizes = {"Req": 3, "Page": 4}
    out: dict[str, object] = {}
    cmd = ["check", name, "--complete", "--requests", "3", "--pages", "4", "--json"]
    out["whole_check"] = _timed_json(cmd, lambda d: d.get("complete", {}).get("summary"))
    start = time.perf_counter()
    done = check_complete(fixed, sizes, variant=name)
    out["complete_in_process"] = {**done.to_json(), "wall_s": _since(start)}
    start = time.perf_counter()
    finite = check_complete(fixed, sizes, variant=name, proof=False, budget_s=300.0)
    out["finite_methods_only"] = {**finite.to_json(), "wall_s": _since(start)}
    start = time.perf_counter()
    ex = explore(fixed, sizes, max_seconds=explore_cap)
    out["explore_capped"] = {
        "cap_s": explore_cap,
        "states": ex.states,
        "finished": not ex.truncated,
        "wall_s": _since(start),
    }
    if done.seconds > 0:
        out["explore_cap_over_complete"] = round(explore_cap / done.seconds, 1)
    return out


def _deep_counterexample() -> object:
    """The 14-step isolation counterexample of the fixed variant without bounded_transfer
    (3 Req / 6 Page, depth 15): BMC as shipped (settled-depth lemmas) against BMC without
    them, in process; and as a whole ``check`` process."""
    from kvproof.checker.verify.protocols import protocol_for
    from kvproof.model.search.bmc import bmc
    from kvproof.spec.variant import load_variant

    name = "sglang-0.5.22-pd"
    protocol = protocol_for(load_variant(name), None, ("bounded_transfer",))
    sizes = {"Req": 3, "Page": 6}
    out: dict[str, object] = {}
    for lemmas in (True, False):
        start = time.perf_counter()
        r = bmc(protocol, sizes, 15, variant=name, invariants=["isolation"], lemmas=lemmas)
        iso = r.result("isolation")
        out["lemmas" if lemmas else "no_lemmas"] = {
            "shortest": iso.shortest,
            "wall_s": _since(start),
        }
    fast, slow = out["lemmas"], out["no_lemmas"]
    out["speedup"] = round(slow["wall_s"] / max(fast["wall_s"], 1e-9), 1)  # type: ignore[index]
    cmd = ["check", name, "--without", "bounded_transfer", "--invariant", "isolation"]
    out["whole_check"] = _timed_json(
        [*cmd, "--no-necessity", "--no-prove", "--json"],
        lambda d: {i["name"]: i.get("shortest") for i in d["invariants"]},
    )
    return out


def _timed_json(args: list[str], pick: object) -> dict[str, object]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kvproof", *args], capture_output=True, text=True, check=False
    )
    out: dict[str, object] = {"command": "kvproof " + " ".join(args), "exit": proc.returncode}
    out["seconds"] = _since(start)
    try:
        out["result"] = pick(json.loads(proc.stdout))  # type: ignore[operator]
    except (ValueError, KeyError, TypeError):
        out["stderr"] = proc.stderr[-300:]
    return out


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 3)


def _python_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def _explore() -> object:
    try:
        from kvproof.model.search import explore as ex  # noqa: F401
    except ImportError:
        return "model/search/explore.py not present"
    proc = subprocess.run(
        [sys.executable, "benchmarks/explore.py"], capture_output=True, text=True, check=False
    )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"error": proc.stderr[-300:]}


if __name__ == "__main__":
    main()
