"""Instructions executed by decode with and without the guards: a load-independent figure.

CPU time on a shared 2-core machine swings by more than the 1% the guards may cost
(``benchmarks/engine.py`` needs many lockstep pairs and an A/A control to see through it).
Instruction counts do not: under ``valgrind --tool=callgrind`` the same seeded workload
executes the same instructions whatever else runs. This script runs ``engine.py``'s workload
once to warm up, then again with callgrind's collection switched on only inside the events
it selects (``--collect``), through a 3-line C helper compiled on first use (it needs a C
compiler and valgrind's headers):

* ``decode``: commit and step events (what ``engine.py`` times);
* ``lookup``: ``PageTags.unchanged`` (may this read reuse a passed check?);
* ``check``: the guarded kernel's tag compare (``tag_mismatch``);
* ``adler32``: the decode-side checksum at commit.

    valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --callgrind-out-file=OUT \
        python benchmarks/guard_instructions.py --guarded --collect decode
    callgrind_annotate OUT | head   # "PROGRAM TOTALS": instructions in the selected events

Compare the plain and the guarded totals of ``decode``: their ratio is the guards' cost in
instructions. Outside valgrind the script runs (and prints its JSON) without counting.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
import engine

import kvproof.kernels.api as kernels_api
from kvproof.spec.variant import load_variant

HELPER = """#include <valgrind/callgrind.h>
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
"""


def _helper() -> ctypes.CDLL:
    """``cg_toggle`` (``CALLGRIND_TOGGLE_COLLECT``) and ``cg_start`` (start instrumenting,
    for ``--instr-atstart=no``) as C calls: no-op instructions outside valgrind."""
    out = Path(tempfile.gettempdir()) / "kvproof_cgtoggle2.so"
    if not out.exists():
        src = out.with_suffix(".c")
        src.write_text(HELPER)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return ctypes.CDLL(str(out))


def counted(fn: Callable[..., Any], toggle: Callable[[], None]) -> Callable[..., Any]:
    def wrapper(*a: Any, **kw: Any) -> Any:
        toggle()
        try:
            return fn(*a, **kw)
        finally:
            toggle()

    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--guarded", action="store_true")
    ap.add_argument("--collect", choices=["decode", "lookup", "check", "adler32"], default="decode")
    ap.add_argument("--model", default="tiny", choices=["tiny", "echo"])
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.device = "cpu"
    torch.set_num_threads(1)
    plain = load_variant("sglang-0.5.22-pd")
    sw = dataclasses.replace(plain.switches, page_tags=True, transfer_checksum="both")
    variant = dataclasses.replace(plain, name="sglang-0.5.22-pd+guards", switches=sw)
    if not args.guarded:
        variant = plain
    helper = _helper()
    engine.run_once(variant, args)  # warm-up: lazy initialisation is not decode's cost
    helper.cg_start()  # with --instr-atstart=no, the imports and warm-up ran 10x faster
    toggle = helper.cg_toggle
    c, run = engine.prepare(variant, args, False)
    h, dec = c.handoff, c.handoff.decode
    original_check = kernels_api.tag_mismatch
    try:
        if args.collect == "decode":
            h._do_commit = counted(h._do_commit, toggle)  # type: ignore[method-assign]
            h._do_step = counted(h._do_step, toggle)  # type: ignore[method-assign]
        elif args.collect == "lookup":
            dec.tags.unchanged = counted(dec.tags.unchanged, toggle)  # type: ignore[method-assign]
        elif args.collect == "check":
            kernels_api.tag_mismatch = counted(original_check, toggle)
        else:
            dec.checksum = counted(dec.checksum, toggle)  # type: ignore[method-assign]
        c.run()
    finally:
        kernels_api.tag_mismatch = original_check
    run = engine._finish(c, run)
    print(
        json.dumps({"guarded": args.guarded, "collect": args.collect, "tokens": run.decode_tokens})
    )


if __name__ == "__main__":
    main()
