"""What a variant means for a deployment, in one clause: "which leaks (no_stray_write
violated in 6 steps)" or "which is safe under bounded_transfer".

``conform`` says it after "your code behaves as ...", so "conforms" never reads as "safe".
The verdicts are the variant's ``[expect]`` table (``check --all`` holds every variant to
it) and the length of its stored counterexample in the regression corpus (``traces/``,
kept true by ``tests/checker/test_corpus.py``), so saying it costs no model run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.traces.corpus import TRACES_DIR

LEAKS = ("isolation", "no_stray_write")


def _steps(name: str, invariant: str, folder: Path) -> int | None:
    path = folder / f"{name}.{invariant}.jsonl"
    if not path.is_file():
        return None
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip())


def what_it_means(variant: Any, folder: Path = TRACES_DIR) -> str:
    """``which leaks (...)`` / ``which is unsafe (...)`` / ``which is safe under ...``."""
    broken = [k for k, v in variant.expect.items() if v == "violated"]
    if not broken:
        under = list(getattr(variant, "assume", {}) or {})
        lively = [k for k, v in getattr(variant, "expect_liveness", {}).items() if v == "violated"]
        said = "which is safe" + (f" under {', '.join(under)}" if under else "")
        return said + (f", though {', '.join(lively)} can fail" if lively else "")
    found = [(inv, _steps(variant.name, inv, folder)) for inv in broken]
    known = sorted((s, inv) for inv, s in found if s is not None)
    inv, steps = (known[0][1], known[0][0]) if known else (broken[0], None)
    how = f"{inv} violated" + (f" in {steps} steps" if steps else "")
    word = "leaks" if any(b in LEAKS for b in broken) else "is unsafe"
    return f"which {word} ({how})"
