"""Triton kernels vs the oracle, as a script so the interpreter setting is never stale.

``python tests/kernels/triton_checks.py [--device cpu|cuda] [CHECK ...]``

On ``cpu`` (default) it sets ``TRITON_INTERPRET=1`` before anything imports Triton: Triton
reads it when ``@triton.jit`` runs, so a test process that imported the kernels earlier
without it could not switch. On ``cuda`` the kernels are compiled (``benchmarks/gpu.sh``).
Shapes are tiny: the interpreter runs 100-1000x slower than torch. Exit code 0 iff every
selected check passed; one line per check on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _setup(device: str) -> None:
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # for paged_cases


CHECKS: dict[str, Callable[[str], None]] = {}


def check(fn: Callable[[str], None]) -> Callable[[str], None]:
    CHECKS[fn.__name__] = fn
    return fn


def _on(device: str, *tensors):
    return [t.to(device) for t in tensors]


@check
def decode(device: str) -> None:
    """Page sizes 1/5/16/64, GQA, NaN in unused slots, shared shuffled pages, 1-3 splits."""
    import torch
    from paged_cases import TOLERANCES, build_case, random_queries

    from kvproof.kernels.reference import reference_decode
    from kvproof.kernels.triton_decode import triton_decode

    for page_size, lens, shared in [(1, [1, 9, 20], 0), (5, [12, 3, 40], 2), (16, [48, 20], 1)]:
        case = build_case(lens, page_size=page_size, seed=page_size, shared_pages=shared)
        q = random_queries(len(lens), 4, 16, torch.float32)
        ref = reference_decode(q, case.kv_pool, case.page_table, case.kv_lens, 16**-0.5)
        args = _on(device, q, case.kv_pool, case.page_table, case.kv_lens)
        for splits in (1, 3):
            out, err = triton_decode(*args, 16**-0.5, num_splits=splits)
            assert err is None
            torch.testing.assert_close(out.cpu(), ref, **TOLERANCES[torch.float32])
    case = build_case([70, 5], page_size=64, num_kv_heads=1, head_dim=8, seed=2)
    q = random_queries(2, 3, 8, torch.float32)  # GQA group of 3: padded rows in the dot
    ref = reference_decode(q, case.kv_pool, case.page_table, case.kv_lens, 0.3)
    out, _ = triton_decode(*_on(device, q, case.kv_pool, case.page_table, case.kv_lens), 0.3)
    torch.testing.assert_close(out.cpu(), ref, **TOLERANCES[torch.float32])


@check
def decode_dtypes(device: str) -> None:
    """fp16 and bf16 against the fp32 oracle, with upstream tolerances; ids above 32,768."""
    import torch
    from paged_cases import TOLERANCES, build_case, random_queries

    from kvproof.kernels.reference import reference_decode
    from kvproof.kernels.triton_decode import triton_decode

    for dtype in (torch.float16, torch.bfloat16):
        case = build_case([9, 33], page_size=4, dtype=dtype, seed=4)
        q = random_queries(2, 4, 16, dtype)
        ref = reference_decode(q, case.kv_pool, case.page_table, case.kv_lens, 0.25)
        args = _on(device, q, case.kv_pool, case.page_table, case.kv_lens)
        out, _ = triton_decode(*args, 0.25, num_splits=2)
        assert out.dtype == dtype
        torch.testing.assert_close(out.cpu(), ref, **TOLERANCES[dtype])
    case = build_case([6, 3], page_size=2, num_kv_heads=1, head_dim=8, first_page=33_000)
    q = random_queries(2, 2, 8, torch.float32)
    ref = reference_decode(q, case.kv_pool, case.page_table, case.kv_lens, 0.3)
    out, _ = triton_decode(*_on(device, q, case.kv_pool, case.page_table, case.kv_lens), 0.3)
    torch.testing.assert_close(out.cpu(), ref, **TOLERANCES[torch.float32])


@check
def extend(device: str) -> None:
    """Mixed batch: decode rows, short and long extends, a row with no new tokens."""
    import torch
    from paged_cases import TOLERANCES, build_case, extend_layout, random_queries

    from kvproof.kernels.reference import reference_extend
    from kvproof.kernels.triton_extend import triton_extend

    for page_size, dtype in [(1, torch.float32), (5, torch.float16), (16, torch.bfloat16)]:
        lens, prefix, indptr = extend_layout([9, 0, 4, 3, 30], [1, 37, 5, 0, 1])
        case = build_case(lens, page_size=page_size, dtype=dtype, seed=page_size)
        q = random_queries(int(indptr[-1]), 4, 16, dtype)
        ref = reference_extend(q, case.kv_pool, case.page_table, prefix, indptr, 0.25)
        args = _on(device, q, case.kv_pool, case.page_table, prefix, indptr)
        out, err = triton_extend(*args, 0.25)
        assert err is None and out.dtype == dtype
        torch.testing.assert_close(out.cpu(), ref, **TOLERANCES[dtype])


@check
def guard(device: str) -> None:
    """Tamper: one entry redirected to another sequence's page flags exactly that sequence,
    zeroes its output and leaves the others bit-identical; the same for extend."""
    import torch
    from paged_cases import build_case, extend_layout, random_queries, tamper

    from kvproof.kernels.triton_decode import triton_decode
    from kvproof.kernels.triton_extend import triton_extend

    case = build_case([20, 30, 16, 9], page_size=4, seed=1)
    q = random_queries(4, 4, 16, torch.float32)
    tags = _on(device, case.page_tags, case.expected_tags)
    base = _on(device, q, case.kv_pool, case.page_table, case.kv_lens)
    clean, err = triton_decode(*base, 0.25, *tags, num_splits=2)
    assert err is not None and not err.any()
    plain, _ = triton_decode(*base, 0.25, num_splits=2)
    assert torch.equal(clean, plain)
    bad = tamper(case, victim=1, donor=3, column=5)
    out, err = triton_decode(
        *_on(device, q, bad.kv_pool, bad.page_table, bad.kv_lens), 0.25, *tags, num_splits=2
    )
    assert err is not None and err.cpu().tolist() == [False, True, False, False]
    assert not out[1].any() and not torch.isnan(out).any()
    assert torch.equal(out[[0, 2, 3]], clean[[0, 2, 3]])

    lens, prefix, indptr = extend_layout([12, 0, 9, 4], [1, 20, 3, 0])
    case = build_case(lens, page_size=4, seed=2)
    q = random_queries(int(indptr[-1]), 4, 16, torch.float32)
    tags = _on(device, case.page_tags, case.expected_tags)
    args = _on(device, q, case.kv_pool, case.page_table, prefix, indptr)
    clean, err = triton_extend(*args, 0.25, *tags)
    assert err is not None and not err.any()
    bad = tamper(tamper(case, victim=1, donor=0, column=4), victim=3, donor=0)
    args = _on(device, q, bad.kv_pool, bad.page_table, prefix, indptr)
    out, err = triton_extend(*args, 0.25, *tags)
    assert err is not None and err.cpu().tolist() == [False, True, False, False]
    rows = torch.ones(q.shape[0], dtype=torch.bool, device=out.device)
    rows[int(indptr[1]) : int(indptr[2])] = False
    assert not out[~rows].any() and torch.equal(out[rows], clean[rows])


@check
def public_api(device: str) -> None:
    """Public entry points with every backend on this device, and 'auto' on CUDA."""
    import torch
    from paged_cases import build_case, extend_layout, random_queries

    import kvproof.kernels as kk

    case = build_case([13, 4], page_size=4, seed=6)
    q = random_queries(2, 4, 16, torch.float32)
    args = _on(device, q, case.kv_pool, case.page_table, case.kv_lens)
    ref = kk.paged_decode(q, case.kv_pool, case.page_table, case.kv_lens, backend="reference")
    for backend in ("triton", "torch", "reference"):  # every backend on this device
        out = kk.paged_decode(*args, backend=backend)
        torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    if device == "cuda":
        assert kk.resolve_backend("auto", args[1]) == "triton"
        torch.testing.assert_close(kk.paged_decode(*args).cpu(), ref, atol=1e-5, rtol=1e-5)
    tags = _on(device, case.page_tags, case.expected_tags)
    out, err = kk.paged_decode_guarded(*args, *tags, backend="triton")
    assert not err.any()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    lens, prefix, indptr = extend_layout([3, 8], [4, 1])
    case = build_case(lens, page_size=4, seed=8)
    q = random_queries(5, 4, 16, torch.float32)
    ref = kk.paged_extend(q, case.kv_pool, case.page_table, prefix, indptr, backend="reference")
    args = _on(device, q, case.kv_pool, case.page_table, prefix, indptr)
    for backend in ("triton", "torch"):
        out = kk.paged_extend(*args, backend=backend)
        torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    tags = _on(device, case.page_tags, case.expected_tags)
    out, err = kk.paged_extend_guarded(*args, *tags, backend="triton")
    assert not err.any()
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


@check
def big_pool(device: str) -> None:
    """CUDA only (9 GiB): page * page_stride past 2**31 elements, where int32 offset math
    wraps; on CPU the other checks use ids > 32,768 but shapes too small to overflow."""
    import torch

    from kvproof.kernels.reference import reference_decode
    from kvproof.kernels.triton_decode import triton_decode

    if device != "cuda":
        raise _Skip("needs a 9 GiB pool")
    num_pages, page_size, heads, dim = 140_000, 16, 8, 128  # stride 16,384: 2**31 at 131,072
    pool = torch.empty(2, num_pages, page_size, heads, dim, dtype=torch.bfloat16, device=device)
    ids = torch.tensor([[139_999, 5, 131_073], [131_072, 70_000, 139_000]], dtype=torch.int32)
    used = ids.flatten().long()
    gen = torch.Generator().manual_seed(0)
    pool[:, used.to(device)] = torch.randn(2, 6, page_size, heads, dim, generator=gen).to(
        device=device, dtype=torch.bfloat16
    )
    small = pool[:, used.to(device)].cpu()  # the same six pages, renumbered 0..5
    lens = torch.tensor([40, 33], dtype=torch.int32)
    q = torch.randn(2, 32, dim, generator=gen).to(torch.bfloat16)
    ref = reference_decode(q, small, torch.arange(6, dtype=torch.int32).view(2, 3), lens, 0.09)
    out, _ = triton_decode(*_on(device, q), pool, *_on(device, ids, lens), 0.09)
    torch.testing.assert_close(out.cpu(), ref, atol=1.5e-2, rtol=1e-2)


class _Skip(Exception):
    """A check that does not apply on this device."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("checks", nargs="*", help=f"default: all of {sorted(CHECKS)}")
    args = parser.parse_args(argv)
    _setup(args.device)
    failed = 0
    for name in args.checks or list(CHECKS):
        start = time.perf_counter()
        try:
            CHECKS[name](args.device)
        except _Skip as why:
            print(f"skip {name}: {why}", flush=True)
            continue
        except Exception as exc:  # report every check, then fail the run
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
            import traceback

            traceback.print_exc()
        else:
            print(f"ok   {name} ({time.perf_counter() - start:.1f}s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
