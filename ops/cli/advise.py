"""Is my release, with my settings, safe? ``kvproof advise sglang==0.5.22`` (start here).

``kvproof advise ENGINE==VERSION [--env NAME=VALUE]... [--server-arg NAME=VALUE]...
[--server-info FILE] [--json | --html OUT.html] [--raw]``: runs the release's own decision
code against every variant of the catalog under those settings (conform) to find the one it
is, states that variant's verdicts (safety and liveness), the assumptions they rest on and
what each asks of the deployment, tells each counterexample in engine words, and names the
setting or release that makes it safe (checked the same way). ``--server-info`` reads a
deployment's ``/server_info`` JSON as ``kvproof audit`` does. Exit 0 safe under the stated
assumptions, 1 unsafe, 2 bad input (unknown engine or version, malformed ``--env``, an env
name the release does not read, a server_info that is not JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kvproof.checker.cli.argtypes import positive_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", metavar="ENGINE==VERSION", help="e.g. sglang==0.5.22")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--server-arg", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--server-info", type=Path, metavar="FILE", help="a /server_info JSON")
    parser.add_argument("--traces", type=positive_int, default=200, help="conform walks (200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--html", type=Path, metavar="OUT.html", help="also write an HTML report")
    parser.add_argument("--raw", action="store_true", help="also print the model's steps")


def run(args: argparse.Namespace) -> int:
    from kvproof.ops.advise.render import lines
    from kvproof.ops.advise.request import deployment
    from kvproof.ops.advise.run import advise

    if args.html is not None:
        from kvproof.checker.cli.paths import check_output_file

        check_output_file(args.html, "--html")
    dep = deployment(
        args.target, env=args.env, server_args=args.server_arg, server_info=args.server_info
    )
    done = advise(dep, traces=args.traces, stage=lambda s: print(f"advise: {s}", file=sys.stderr))
    doc = done.to_json()
    if args.html is not None:
        from kvproof.ops.advise.html import advise_page
        from kvproof.spec.files import write_text_atomic

        write_text_atomic(args.html, advise_page(doc))
        print(f"wrote {args.html}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(lines(doc, raw=args.raw)))
    return done.exit_code
