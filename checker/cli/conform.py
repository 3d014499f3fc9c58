"""Ask the release's own code: SGLang's or vLLM's real decision code under the model's walks.

``kvproof conform VARIANT [--sglang VERSION|PATH | --vllm VERSION|PATH] [--traces N]
[--seed S] [--no-faults] [--json] [--out DIR] [--quiet]``, or ``conform --all``: the engine
is the variant's; the release comes from a cached wheel (pip, once) or PATH; after every
model step the code's decisions are compared with the model's (docs/conform.md,
docs/conform-vllm.md). Exit 0 agrees, 1 a divergence (a trace in ``--out``), 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_int, same_names
from kvproof.checker.cli.consoles import add_quiet_option, emit
from kvproof.checker.cli.paths import check_output_dir
from kvproof.checker.distrib.executor import add_ray_option


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "variant",
        nargs="?",
        help="variant name, .toml path, or release (sglang==0.5.20: the variant its code is,"
        " and that release unless --sglang says another); an SGLang or a vLLM variant",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every SGLang variant on every release its [upstream] lists, plus the cross "
        "cells of docs/conform.md; prints the release-to-variant table",
    )
    parser.add_argument(
        "--sglang",
        metavar="VERSION|PATH",
        help="release (0.5.15 to 0.5.23) or tree to run; default: the newest release the "
        "variant's [upstream] table lists",
    )
    parser.add_argument(
        "--vllm",
        metavar="VERSION|PATH",
        help="a vLLM release (fetched once with pip) or tree (an unpacked wheel or a vLLM "
        "checkout) to run a vLLM variant against; default: the newest release its "
        "[upstream] table lists",
    )
    parser.add_argument("--traces", type=positive_int, default=200, help="walks to run (200)")
    parser.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0)
    parser.add_argument(
        "--faults",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="environment faults in the walks: transfer failures, prefill aborts, release "
        "and waiting timeouts (default: on; --no-faults walks with client aborts only)",
    )
    parser.add_argument("--out", default="kvproof-out", help="folder for a divergence trace")
    parser.add_argument(
        "--workers", type=int_at_least(1, 256), help="processes for --all (default: CPUs, max 4)"
    )
    add_ray_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet_option(parser)


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.render.conform import render
    from kvproof.spec.errors import KvproofInputError

    if args.all:
        if args.variant or args.sglang or args.vllm:
            raise KvproofInputError("--all runs every variant and release: drop them", "--all")
        return _run_all(args)
    if not args.variant:
        raise KvproofInputError("give a VARIANT, or --all", "conform")
    from kvproof.checker.runs.conform_run import conform_variant
    from kvproof.spec.variant import load_variant

    out = check_output_dir(Path(args.out), "--out")
    variant = load_variant(args.variant)
    sglang = args.sglang
    if variant.engine == "sglang" and not args.sglang and not args.vllm:
        sglang = _default_sglang(variant, args)

    def walked(n: int, total: int) -> None:  # every 50 walks
        if (n % 50 == 0 or n == total) and total >= 50:
            _say(args, f"conform {variant.name}: {n}/{total} walks")

    given = {"sglang": sglang, "out": out, "progress": walked}
    result = conform_variant(variant, **same_names(conform_variant, args, **given))
    return emit(result, args.json, lambda: render(result))


def _say(args: argparse.Namespace, line: str) -> None:
    """Progress on stderr, a line each (fine in a pipe); none with ``--quiet``."""
    if not args.quiet:
        print(line, file=sys.stderr, flush=True)


def _default_sglang(variant, args: argparse.Namespace) -> str:
    """The SGLang release a bare VARIANT (or ``sglang==X``) runs, said on stderr (issue 41)."""
    from kvproof.checker.upstream.run import default_release
    from kvproof.spec.by_release import parse_release, release_span, say_release

    say_release([args.variant])
    asked = parse_release(args.variant)
    release = asked.version if asked else default_release(variant)
    why = (
        f"the release named, {asked}"
        if asked
        else f"the newest of {release_span(variant)} that {variant.name}'s [upstream] lists"
    )
    _say(args, f"kvproof: running sglang {release}: {why} (--sglang VERSION|PATH picks another)")
    return release


def _run_all(args: argparse.Namespace) -> int:
    from kvproof.checker.distrib.executor import executor_for, make_executor
    from kvproof.checker.render.conform import render_matrix
    from kvproof.checker.upstream.matrix import Cell, conform_all

    def done(cell: Cell) -> None:
        _say(args, f"conform {cell.variant} on {cell.release} ({cell.column}): {cell.mark}")

    workers = args.workers or min(4, os.cpu_count() or 1)
    with executor_for(args.ray, workers) or make_executor(workers) as executor:
        m = conform_all(args.traces, args.seed, executor, done)
    return emit(m, args.json, lambda: render_matrix(m))
