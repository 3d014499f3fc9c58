"""Ask the release's own code: drive SGLang's real decode decision code with the model's walks.

``kvproof conform VARIANT [--sglang VERSION|PATH] [--traces N] [--seed S] [--faults] [--json]
[--out DIR]``: loads only the release's decision modules (``DecodeTransferQueue``,
``Scheduler.abort_request``, the receiver's abort and waiting timeout, the manager's ACK
accounting) from a cached wheel (``VERSION``: 0.5.15 to 0.5.23, fetched once with pip into
``$XDG_CACHE_HOME/kvproof/sglang/VERSION``) or from PATH (an unpacked wheel or the folder
holding ``sglang/``), stands in for the rest, and compares after every model step which pages
the code frees or holds, aborts and commits. Client aborts are in every walk; ``--faults``
adds transfer failures, prefill aborts, release timeouts and waiting timeouts. Exit 0 when
the code agrees, 1 on a divergence (a trace in ``--out`` naming the switch), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kvproof.checker.cli.argtypes import int_at_least, positive_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help="variant name or .toml path (an SGLang variant)")
    parser.add_argument(
        "--sglang",
        metavar="VERSION|PATH",
        help="release (0.5.15 to 0.5.23) or tree to run; default: the newest release the "
        "variant's [upstream] table lists",
    )
    parser.add_argument("--traces", type=positive_int, default=200, help="walks to run (200)")
    parser.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0)
    parser.add_argument("--faults", action="store_true", help="inject environment faults")
    parser.add_argument("--out", default="kvproof-out", help="folder for a divergence trace")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.upstream.run import conform, default_release
    from kvproof.spec.variant import load_variant

    variant = load_variant(args.variant)
    result = conform(
        variant,
        args.sglang or default_release(variant),
        traces=args.traces,
        seed=args.seed,
        faults=args.faults,
        out=Path(args.out),
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return result.exit_code
    env = ", ".join(f"{k}={v} ({result.env_source[k]})" for k, v in result.env.items())
    verdict = "conforms" if result.switch is None else f"DIVERGES on switch '{result.switch}'"
    verdict = "RAISED (the release's own code; a finding)" if result.raised else verdict
    print(f"{variant.name} vs sglang {result.release} (adapter {result.adapter}): {verdict}")
    print(f"  {result.walks} walks, {result.steps} steps, {result.seconds:.2f} s")
    print(f"  env: {env}")
    made = ", ".join(f"{k} {v}" for k, v in (result.decisions or {}).items())
    print(f"  the code decided: {made}")
    for name, counts in (result.pages or {}).items():
        print(
            f"  pages, {counts.prompt_tokens}-token prompt ({name.replace('_', '-')}): "
            f"decode reserves {counts.reserved}, prefill sends "
            f"{'nothing' if counts.sent is None else counts.sent}"
        )
    for line in result.detail:
        print(f"  {line}")
    for path in result.files:
        print(f"  trace: {path}")
    return result.exit_code
