"""The process leaves when its work is done: no finalizer spin at exit (Z3_del_context).

``kvproof check sglang-0.5.22-pd --depth 12`` once finished its work and then spun for
minutes in ``Z3_del_context`` during interpreter teardown; the console entry point now
flushes and leaves with ``os._exit`` (``checker/cli/__init__.py: entry``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

RUNS = 20
ARGV = ["check", "sglang-0.5.22-pd", "--depth", "3", "--no-prove", "--json"]


@pytest.mark.slow
def test_check_on_the_fixed_variant_exits_20_times() -> None:
    for i in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-m", "kvproof", *ARGV],
            capture_output=True,
            text=True,
            timeout=120,  # a hang fails the test, it does not stall the suite
            check=False,
        )
        assert done.returncode == 0, (i, done.stderr)
        assert '"verdict": "holds"' in done.stdout, i


def test_entry_flushes_and_exits_with_mains_code() -> None:
    code = (
        "from kvproof.checker.cli import entry; import sys; "
        "sys.argv = ['kvproof', 'check']; entry()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
