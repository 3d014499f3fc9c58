"""Ask the release's own code: drive SGLang's real decode decision code with the model's walks.

``kvproof conform VARIANT [--sglang VERSION|PATH] [--traces N] [--seed S] [--faults] [--json]
[--out DIR]``: loads only the release's decision modules (``DecodeTransferQueue``,
``Scheduler.abort_request``, the receiver's abort and waiting timeout, the manager's ACK
accounting) from a cached wheel (``VERSION``: 0.5.19 to 0.5.23, fetched once with pip into
``$XDG_CACHE_HOME/kvproof/sglang/VERSION``) or from PATH (an unpacked wheel or the folder
holding ``sglang/``), stands in for the rest, and compares after every model step which pages
the code frees or holds, aborts and commits. Client aborts are in every walk; ``--faults``
adds transfer failures, prefill aborts, release timeouts and waiting timeouts. Exit 0 when
the code agrees, 1 on a divergence (a trace in ``--out`` naming the switch), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "variant",
        help="variant name, .toml path, or release (sglang==0.5.20: the variant its code is,"
        " and that release unless --sglang says another)",
    )
    parser.add_argument(
        "--sglang",
        metavar="VERSION|PATH",
        help="release (0.5.19 to 0.5.23) or tree to run; default: the newest release the "
        "variant's [upstream] table lists",
    )
    parser.add_argument("--traces", type=positive_int, default=200, help="walks to run (200)")
    parser.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0)
    parser.add_argument("--faults", action="store_true", help="inject environment faults")
    parser.add_argument("--out", default="kvproof-out", help="folder for a divergence trace")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.upstream.run import conform, default_release
    from kvproof.spec.by_release import parse_release, release_span, say_release
    from kvproof.spec.variant import load_variant

    variant = load_variant(args.variant)
    say_release([args.variant])
    asked = parse_release(args.variant)
    release = args.sglang or (asked.version if asked else default_release(variant))
    if not args.sglang:  # say which release runs, and why (issue 41: 0.5.23, unsaid)
        why = (
            f"the release named, {asked}"
            if asked
            else f"the newest of {release_span(variant)} that {variant.name}'s [upstream] lists"
        )
        print(
            f"kvproof: running sglang {release}: {why} (--sglang VERSION|PATH picks another)",
            file=sys.stderr,
        )
    result = conform(
        variant,
        release,
        traces=args.traces,
        seed=args.seed,
        faults=args.faults,
        out=Path(args.out),
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return result.exit_code
    verdict = "conforms" if result.switch is None else f"DIVERGES on switch '{result.switch}'"
    print(f"{variant.name} vs sglang {result.release} (adapter {result.adapter}): {verdict}")
    print(f"  {result.walks} walks, {result.steps} steps, {result.seconds:.2f} s")
    # One setting a line: three env names on one line made a 221-character line (issue 41).
    print("  env:")
    for k, v in result.env.items():
        print(f"    {k}={v} ({result.env_source[k]})")
    made = ", ".join(f"{k} {v}" for k, v in (result.decisions or {}).items())
    print(f"  the code decided: {made}")
    for line in result.detail:
        print(f"  {line}")
    for path in result.files:
        print(f"  trace: {path}")
    return result.exit_code
