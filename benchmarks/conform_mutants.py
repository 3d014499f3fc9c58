"""How many realistic bugs ``kvproof conform`` catches with its defaults: plant each in a
copy of the cached SGLang 0.5.22 wheel (a text patch whose anchor must exist), run
``kvproof conform sglang-0.5.22-pd --sglang COPY --json`` in a fresh process, and record
whether it exits 1 (killed), the switch it names and the seconds. Prints JSON and writes
``benchmarks/conform_mutants.json``.

    python benchmarks/conform_mutants.py [--traces 200] [--only NAME ...]

Each mutant is a bug a developer could write. One planted earlier
(``waiting_timeout_no_abort_sent``) is equivalent over the whole decision path: ``REPLACED``
gives the argument (file::function) and its replacement in the same area.

The copy hard-links every file of the release but the patched one (which is rewritten),
so the cache is never touched. A mutant whose anchor is missing is an error, not a pass.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = "0.5.22"
D, C = "sglang/srt/disaggregation/decode.py", "sglang/srt/disaggregation/common/conn.py"
S, P = "sglang/srt/managers/scheduler.py", "sglang/srt/disaggregation/prefill.py"
U, E = "sglang/srt/disaggregation/utils.py", "sglang/srt/environ.py"
MU = "sglang/srt/managers/utils.py"

# (name, area, file, anchor, replacement): each a bug a developer could write.
MUTANTS = (
    ("release_deadline_removed", "deadlines", D,
     "if not drained and now < deadline:", "if not drained:"),
    ("release_deadline_zero", "deadlines", D,
     "deadline = start_time + self.deferred_kv_release_timeout", "deadline = start_time"),
    ("waiting_timeout_ignored", "timeouts", C,
     "if elapsed < self.kv_mgr.waiting_timeout:", "if elapsed < 1e9:"),
    # Replaces ``waiting_timeout_no_abort_sent`` (equivalent: see REPLACED).
    ("waiting_timeout_restarts_on_poll", "timeouts", C,
     "                self._prefill_wait_start = None\n"
     "                self.init_time = time.time()",
     "                self._prefill_wait_start = None\n"
     "            self.init_time = time.time()"),
    ("ack_always_safe", "per-rank ACKs", C,
     "return len(acks) >= required_acks", "return True"),
    ("ack_off_by_one", "per-rank ACKs", C,
     "return len(acks) >= required_acks", "return len(acks) >= required_acks - 1"),
    ("ack_one_per_request", "per-rank ACKs", D,
     "else len(decode_req.kv_receiver.bootstrap_infos)",
     "else min(1, len(decode_req.kv_receiver.bootstrap_infos))"),
    ("ack_any_generation", "per-rank ACKs", C,
     "if state is not None and state.generation == generation:", "if state is not None:"),
    ("abort_frees_at_once", "abort path", D,
     "if requires_host_drain or (\n                    deferrable and "
     "decode_req.kv_receiver.abort_notified\n                ):", "if False:"),
    ("abort_not_notified", "abort path", C,
     "        self.conclude_state = KVPoll.Failed\n        self.ensure_abort_notified()",
     "        self.conclude_state = KVPoll.Failed"),
    ("abort_skips_transfer_queue", "abort path", S,
     "                    decode_req.kv_receiver.abort()\n\n            # Abort requests whose KV",
     "                    pass\n\n            # Abort requests whose KV"),
    ("failure_not_force_armed", "abort path", D,
     "decode_req.kv_receiver.ensure_abort_notified(force_arm=True)", "pass"),
    ("failed_not_terminal", "status order", C,
     "        if current == KVPoll.Failed:\n            # Failed is terminal.",
     "        if False:\n            # Failed is terminal."),
    ("failed_status_dropped", "status order", C,
     "        if status == KVPoll.Failed:\n            self.request_status[bootstrap_room] "
     "= KVPoll.Failed", "        if False:\n            self.request_status[bootstrap_room] "
     "= KVPoll.Failed"),
    ("success_never_committed", "status order", D,
     "elif poll == KVPoll.Success:", "elif poll == KVPoll.Success and False:"),
    ("deferred_release_default_off", "deadlines", E,
     "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE = EnvBool(True)",
     "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE = EnvBool(False)"),
    ("reject_reads_finished_only", "admission", U,
     "    return isinstance(req.to_finish, FINISH_ABORT) or isinstance(\n"
     "        req.finished_reason, FINISH_ABORT\n    )",
     "    return isinstance(req.finished_reason, FINISH_ABORT)"),
    ("intake_reject_not_retired", "admission", P,
     "            self.scheduler.retire_unadmitted_request(req)\n            return",
     "            pass"),
    ("input_length_never_rejected", "admission", MU,
     "if len(req.origin_input_ids) >= max_req_input_len:",
     "if len(req.origin_input_ids) >= 10 * max_req_input_len:"),
    ("prefill_pages_one_short", "page counts", P,
     "            len(req.origin_input_ids) - decode_prefix_len,",
     "            len(req.origin_input_ids) - decode_prefix_len - 1,"),
    ("last_chunk_drops_partial_page", "page counts", P,
     "        if not last_chunk:\n            # if not the last chunk and the last page is "
     "partial, delay", "        if True:\n            # if not the last chunk and the last "
     "page is partial, delay"),
    ("decode_reserve_retires_no_reject", "reservation", D,
     "if not is_retracted and not is_rebootstrap and is_unadmitted_reject(req):",
     "if False:"),
)  # fmt: skip


# Mutants dropped as equivalent on every path of the release's decision code, each with the
# argument (0.5.22 wheel) and its replacement in the same area; the JSON marks the
# replacement.
REPLACED = {
    "waiting_timeout_restarts_on_poll": {
        "replaces": "waiting_timeout_no_abort_sent",
        "reason": (
            "common/conn.py::CommonKVReceiver._check_waiting_timeout runs only inside "
            "_poll's WaitingForInput branch with init_time set, i.e. from "
            "decode.py::DecodeTransferQueue.pop_transferred (via _poll_with_metadata_gate) or, "
            "under the prefill_complete policy, DecodePreallocQueue._update_handshake_waiters. "
            "In pop_transferred the same pass takes the Failed branch, where deferred release "
            "(on by default, srt/environ.py) calls ensure_abort_notified(force_arm=True): the "
            "same ABORT frames with the same armed generation (init_time is set, so the "
            "original arms too) before any other request is handled. In the prealloc queue "
            "the failed request's kv_receiver.clear() -> CommonKVReceiver._clear sends the "
            "ABORT itself (defer_decode_allocation, abort_notified still False), in the same "
            "pop_preallocated. With deferred release off the ABORT is never sent, but no "
            "model sends one after decode gives up (model/handoff/rules/release.py::give_up "
            "sets no abort_msg), so no variant can tell the two apart."
        ),
    },
}


def plant(src: Path, dest: Path, rel: str, old: str, new: str) -> None:
    shutil.copytree(src, dest, copy_function=os.link)
    target = dest / rel
    text = target.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"anchor of {rel} found {text.count(old)} times: {old[:60]!r}")
    target.unlink()  # a hard link to the cache: write a new file instead
    target.write_text(text.replace(old, new))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from kvproof.checker.upstream import fetch

    src = fetch.cached(RELEASE)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rows = []
    for name, area, rel, old, new in MUTANTS:
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "sglang-mutant"
            plant(src, tree, rel, old, new)
            cmd = [sys.executable, "-m", "kvproof", "conform", "sglang-0.5.22-pd",
                   "--sglang", str(tree), "--traces", str(args.traces), "--json", "--quiet",
                   "--out", str(Path(tmp) / "out")]  # fmt: skip
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            secs = time.perf_counter() - t
        result = json.loads(done.stdout) if done.returncode in (0, 1) else {}
        diag = result.get("diagnosis") or {}
        rows.append({
            "mutant": name,
            "area": area,
            "file": rel,
            "killed": done.returncode == 1,
            "exit_code": done.returncode,
            "named_switch": result.get("switch"),
            "diagnosis": diag.get("headline"),
            "walks": result.get("walks"),
            "seconds": round(secs, 2),
            "stderr": done.stderr.strip().splitlines()[-1:] if done.returncode > 1 else [],
            **({"replacement": REPLACED[name]} if name in REPLACED else {}),
        })  # fmt: skip
        said = {0: "SURVIVED", 1: "killed"}.get(done.returncode, f"ERROR (exit {done.returncode})")
        print(f"{name}: {said}", file=sys.stderr)
    killed = sum(r["killed"] for r in rows)
    out = {
        "benchmark": "conform_mutants",
        "command": f"python benchmarks/conform_mutants.py --traces {args.traces}",
        "release": RELEASE,
        "variant": "sglang-0.5.22-pd",
        "mutants": len(rows),
        "killed": killed,
        "kill_rate": round(killed / len(rows), 3) if rows else None,
        "results": rows,
    }
    print(json.dumps(out, indent=2))
    if not args.only:
        (ROOT / "benchmarks" / "conform_mutants.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
