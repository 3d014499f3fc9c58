"""Serve the reference engine behind an OpenAI-compatible HTTP API (echo model).

``kvproof serve --variant V [--host 127.0.0.1 --port N]``: ``POST /v1/completions`` and
``/v1/chat/completions`` (with and without ``stream``), ``GET /v1/models``, ``/health``,
``/metrics``. The tenant is the bearer key; status codes are the engine's (the buggy
variant answers 200 with another tenant's text). Prefill and RDMA timings are simulated
(``--prefill-us-per-token``, ``--transfer-us-per-page``) so that an answer that skipped its
prefill is visibly fast, as in the incident. Without ``--variant`` it serves
``sglang-0.5.22-pd``, the recommended fixed release; ``--variant sglang-0.5.19-pd`` serves
the incident's.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvproof.checker.cli.argtypes import nonnegative_float, port


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--variant",
        default="sglang-0.5.22-pd",
        help="engine version, a name or .toml path (default: sglang-0.5.22-pd, the recommended"
        " fixed release; sglang-0.5.19-pd serves the incident)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (loopback default)")
    parser.add_argument("--port", type=port, default=8000, help="1..65535 (8000)")
    parser.add_argument(
        "--own-sizes",
        action="store_true",
        help="use the variant's own engine_sizes instead of the incident's",
    )
    parser.add_argument(
        "--prefill-us-per-token",
        type=nonnegative_float,
        default=200.0,
        help="simulated prefill compute per prefilled token (microseconds)",
    )
    parser.add_argument(
        "--transfer-us-per-page",
        type=nonnegative_float,
        default=500.0,
        help="simulated RDMA latency of one page write (microseconds)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the engine (model weights and scheduler)"
    )


def run(args: argparse.Namespace) -> int:
    from kvproof.spec.variant import load_variant

    load_variant(args.variant)  # a bad variant is bad input before the port is taken
    sock = bind(args.host, args.port)
    import torch

    from kvproof.ops.serve.config import ServeConfig
    from kvproof.ops.serve.server import serve_forever

    torch.set_num_threads(1)  # tiny matmuls: extra intra-op threads only add latency
    config = ServeConfig.for_variant(
        args.variant,
        own_sizes=args.own_sizes,
        prefill_us_per_token=args.prefill_us_per_token,
        transfer_us_per_page=args.transfer_us_per_page,
        seed=args.seed,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"kvproof: warning: binding {args.host}, not loopback", file=sys.stderr)
    s = config.sizes
    print(
        f"kvproof serve: {config.variant.name} on http://{args.host}:{args.port} "
        f"(model {config.model_id}, context {s.context_len}, sizes of {config.sizes_from}: "
        f"prefill pool {s.prefill_pool_tokens}, decode pool {s.decode_pool_tokens}, "
        f"page {s.page_size}; simulated prefill {args.prefill_us_per_token:g} us/token, "
        f"RDMA {args.transfer_us_per_page:g} us/page)",
        flush=True,
    )
    serve_forever(config, args.host, args.port, sock)
    return 0


def bind(host: str, port_no: int) -> Any:
    """A listening socket on ``host:port``; a bad host or a taken port is bad input."""
    import socket  # here, not at the top: every command's parser imports this module

    from kvproof.spec.errors import KvproofInputError

    try:
        infos = socket.getaddrinfo(host, port_no, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise KvproofInputError(f"cannot resolve this host: {exc}", f"--host {host}") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise KvproofInputError(
            f"cannot listen on {host}:{port_no}: {exc.strerror or exc}", f"--port {port_no}"
        ) from None
    return sock
