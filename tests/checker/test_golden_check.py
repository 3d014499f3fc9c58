"""A golden test of ``kvproof check --all --json``: the whole document, seconds masked.

Refactors of the ``check`` path (issue #26 item 2: the run object, the thin CLI) must leave
the ``--json`` shape and every verdict, trace and explanation as they were. A change that
means to alter the shape regenerates the golden on purpose, and the diff shows in review:

    PYTHONPATH=$PWD/src python tests/checker/test_golden_check.py --write

What is masked, and why (everything else is deterministic: each variant runs in a fresh
fork, ``checker/verify/check_pool.py``, so scheduling picks no other counterexample; BMC and
the prover run with Python's collector held, ``model/search/steady.py``, so an unsat core
or a counterexample is a function of the question, not of what was allocated before it):

- every key that names seconds (``seconds``, ``seconds_to_...``): wall-clock time;
- the ``N.N s`` inside a ``summary`` or ``settle`` text (``model/search/complete.py`` and
  the proof's summary print their time);
- ``kvproof_version``: a release bump is not a change of shape.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "check_all.json"
MASK = "<masked>"
_SECONDS_IN_TEXT = re.compile(r"\b\d+(?:\.\d+)? s\b")


def mask(value: Any, key: str = "") -> Any:
    """``value`` with every nondeterministic field replaced by ``MASK`` (see the docstring)."""
    if "seconds" in key or key == "kvproof_version":
        return MASK
    if isinstance(value, dict):
        return {k: mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, str):
        return _SECONDS_IN_TEXT.sub(f"{MASK} s", value)
    return value


def check_all() -> tuple[int, Any]:
    """``kvproof check --all --json`` in a fresh interpreter: its exit code and document."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "kvproof", "check", "--all", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_the_mask_hides_time_and_nothing_else() -> None:
    doc = {
        "seconds": 1.25,
        "kvproof_version": "9.9.9",
        "proof": {"summary": "proved (proof, 3.1 s)", "queries": 4},
        "complete": {"seconds_to_first_finding": 0.5, "settle": "kvproof check x"},
        "invariants": [{"name": "isolation", "depth": 12, "seconds": 0.01}],
    }
    assert mask(doc) == {
        "seconds": MASK,
        "kvproof_version": MASK,
        "proof": {"summary": f"proved (proof, {MASK} s)", "queries": 4},
        "complete": {"seconds_to_first_finding": MASK, "settle": "kvproof check x"},
        "invariants": [{"name": "isolation", "depth": 12, "seconds": MASK}],
    }


@pytest.mark.slow
def test_check_all_json_matches_the_golden() -> None:
    code, doc = check_all()
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert code == golden["exit_code"]
    assert mask(doc) == golden["document"]


def write_golden(source: Path | None = None, code: int = 0) -> None:
    """Regenerate the golden: by running ``check --all --json``, or from a saved run's
    output and its exit code (0: every verdict matches its variant's expectation)."""
    if source is None:
        code, doc = check_all()
    else:
        doc = json.loads(source.read_text(encoding="utf-8"))
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    body = {"exit_code": code, "document": mask(doc)}
    GOLDEN.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    # --write [SAVED.json EXIT_CODE]: regenerate on purpose (a new run, or a saved one's)
    if sys.argv[1:2] == ["--write"] and len(sys.argv) in (2, 4):
        saved = sys.argv[2:]
        write_golden(Path(saved[0]), int(saved[1])) if saved else write_golden()
    else:
        sys.exit("usage: test_golden_check.py --write [SAVED_CHECK_ALL.json EXIT_CODE]")
