"""Fuzz a variant: model-guided random walks on the engine, shrunk to a minimal trace.

``kvproof fuzz VARIANT [--traces N] [--seed S] [--faults] [--workers W] [--ray [ADDRESS]]
[--resume DIR] [--device cuda]``: each walk is a run of the model forced on the reference
engine (with ``--faults``: transfer failures, disconnects, aborts, timeouts, lease expiries,
reordered writes, duplicate status messages), checked after every step. The first finding
is shrunk by Hypothesis, saved as a trace in ``--out`` and printed as a ``kvproof replay``
command. First, the model alone is searched (random walks, no engine, no torch): a
model-side finding is reported at once, then confirmed on the engine
(``--engine-only`` skips this). Exit 1 on a finding, 0 when every walk was clean.

A finding's kind is a divergence, an engine crash, or, once the engine has drained to every
client's answer, what the clients saw, in replay's words: a **leak** (a response carried
another tenant's canary), a **wrong_answer**, or a **violation** (an invariant broken on
the state, no response shows it). ``--json`` counts each kind (``divergences``, ``leaks``,
``wrong_answers``, ``violations``, ``crashes``) and gives the finding's ``kind`` and
``shows`` (replay's ``shows``: leak, wrong_answer, engine_state or nothing).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_int, same_names
from kvproof.checker.cli.consoles import add_quiet_option, emit, for_run
from kvproof.checker.cli.paths import check_output_dir
from kvproof.checker.distrib.executor import add_ray_option


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help="variant name or .toml path")
    parser.add_argument("--traces", type=positive_int, default=200, help="walks to run (200)")
    parser.add_argument(
        "--seed",
        type=int_at_least(0, 2**32 - 1),
        default=0,
        help="seed of the walks: the same seed gives the same walks and finding",
    )
    parser.add_argument("--faults", action="store_true", help="inject environment faults")
    parser.add_argument(
        "--workers", type=int_at_least(1, 256), help="processes (default: CPUs, max 4)"
    )
    parser.add_argument(
        "--requests", type=int_at_least(1, 16), default=2, help="requests per walk (2)"
    )
    parser.add_argument(
        "--pages", type=int_at_least(1, 64), default=3, help="decode pages per walk (3)"
    )
    parser.add_argument("--out", default="kvproof-out", help="folder for a failing trace")
    parser.add_argument("--html", metavar="DIR", help="an HTML report of the finding here")
    parser.add_argument(
        "--engine-only",
        action="store_true",
        help="skip the model-first search; walk model and engine in lockstep from the start",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="engine device (cpu)"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="campaign folder: batches done are recorded there and skipped on a rerun; "
        "findings are written to DIR/findings as they arrive",
    )
    add_ray_option(parser)
    add_quiet_option(parser)


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render import fuzz as render_fuzz
    from kvproof.checker.runs.fuzz_run import FuzzOptions, fuzz_variant
    from kvproof.spec.variant import load_variant

    # Before the work: a finding that cannot be saved is a finding lost.
    out = check_output_dir(args.out, "--out")
    html = check_output_dir(args.html, "--html")
    console, progress = for_run(args)
    variant = load_variant(args.variant)
    done = fuzz_variant(
        variant,
        FuzzOptions(**same_names(FuzzOptions, args, out=out, html=html)),
        progress=progress,
        on_model_finding=None
        if args.json
        else lambda found, saved: render_fuzz.model_finding(console, variant, found, saved),
    )
    return emit(done, args.json, lambda: render_fuzz.render(console, done))
