"""Triton kernels under the interpreter, run in a subprocess (see triton_checks.py).

A subprocess, not an in-process import: ``TRITON_INTERPRET`` is read when ``@triton.jit``
runs, so whichever test imported the kernels first would fix the mode for all the others.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("triton_checks.py")
CHECKS = ["decode", "decode_dtypes", "extend", "guard", "public_api"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def interpreter_run() -> dict[str, str]:
    """Run every check once in one interpreter process; map check name -> its report line."""
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", *CHECKS],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    lines = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("ok", "FAIL"):
            lines[parts[1].rstrip(":")] = line
    lines["__stderr__"] = proc.stderr[-4000:]
    return lines


@pytest.mark.parametrize("name", CHECKS)
def test_triton_interpreter(interpreter_run: dict[str, str], name: str) -> None:
    line = interpreter_run.get(name, "")
    assert line.startswith("ok"), f"{line or 'no report'}\n{interpreter_run['__stderr__']}"


def test_triton_on_cpu_needs_the_interpreter() -> None:
    """Without TRITON_INTERPRET, backend='triton' on CPU tensors is a typed input error."""
    pytest.importorskip("triton")
    code = (
        "import torch, kvproof.kernels as k\n"
        "pool = torch.zeros(2, 1, 1, 1, 1)\n"
        "try:\n"
        "    k.resolve_backend('triton', pool)\n"
        "except k.KernelInputError as e:\n"
        "    print('refused:', e)\n"
    )
    env = {key: val for key, val in os.environ.items() if key != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert "refused:" in proc.stdout and "TRITON_INTERPRET" in proc.stdout, proc.stderr
