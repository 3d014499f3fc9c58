"""The ``--ray [ADDRESS]`` option, shared by ``fuzz``, ``check --all`` and ``prove --all``.

Parsing never imports Ray; only ``executor_for`` does, and only when ``--ray`` was given.
"""

from __future__ import annotations

import argparse
from typing import Any

LOCAL = "local"  # what a bare ``--ray`` parses to: start a Ray on this machine


def add_ray_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="run the work units on Ray: bare, a local Ray started here; 'auto' or "
        "host:port, a running cluster (needs: pip install 'kvproof[ray]')",
    )


def executor_for(ray: str | None, workers: int) -> Any:
    """A Ray executor for ``--ray`` (``workers``: CPUs of a Ray started here), or None."""
    if ray is None:
        return None
    from kvproof.checker.distrib.ray_executor import RayExecutor

    return RayExecutor(None if ray == LOCAL else ray, num_cpus=workers)
