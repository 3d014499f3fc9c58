"""``kvproof check --liveness``: the liveness half of ``check`` (issue #29).

Parses nothing: ``check.py`` hands over its arguments; one library call
(``checker/runs/liveness_run.py``), one renderer (``checker/runs/render_liveness.py``).
"""

from __future__ import annotations

import argparse
from typing import Any


def run_liveness(args: argparse.Namespace, names: list[str], console: Any, progress: Any) -> int:
    from kvproof.checker.runs.liveness_run import check_liveness_of
    from kvproof.checker.runs.render_liveness import render_run

    done = check_liveness_of(
        args.variants,
        every=args.all,
        variants_dir=args.variants_dir,
        properties=tuple(names) or None,
        without=tuple(args.without),
        necessity=not args.no_necessity,
        protocol=args.protocol,
        out=args.out,
        html=args.html,
        progress=progress,
    )
    render_run(console, done, as_json=args.json, raw=args.raw)
    return done.exit_code
