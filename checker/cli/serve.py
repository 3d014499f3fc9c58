"""Serve the reference engine behind an OpenAI-compatible HTTP API (echo model).

``kvproof serve --variant V [--host 127.0.0.1 --port N]``: ``POST /v1/completions`` and
``/v1/chat/completions`` (with and without ``stream``), ``GET /v1/models``, ``/health``,
``/metrics``. The tenant is the bearer key; status codes are the engine's (the buggy
variant answers 200 with another tenant's text). Prefill and RDMA timings are simulated
(``--prefill-us-per-token``, ``--transfer-us-per-page``) so that an answer that skipped its
prefill is visibly fast, as in the incident.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--variant", default="sglang-0.5.22-pd", help="engine version (name or .toml path)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (loopback default)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--own-sizes",
        action="store_true",
        help="use the variant's own engine_sizes instead of the incident's",
    )
    parser.add_argument(
        "--prefill-us-per-token",
        type=float,
        default=200.0,
        help="simulated prefill compute per prefilled token (microseconds)",
    )
    parser.add_argument(
        "--transfer-us-per-page",
        type=float,
        default=500.0,
        help="simulated RDMA latency of one page write (microseconds)",
    )
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from kvproof.spec.errors import KvproofInputError

    if not 0 < args.port < 65536:
        raise KvproofInputError(f"port {args.port} out of range", "--port")
    if args.prefill_us_per_token < 0 or args.transfer_us_per_page < 0:
        raise KvproofInputError("simulated timings must be >= 0", "--prefill-us-per-token")
    import torch

    from kvproof.checker.serve.config import ServeConfig
    from kvproof.checker.serve.server import serve_forever

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
    serve_forever(config, args.host, args.port)
    return 0
