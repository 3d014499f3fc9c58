"""``kvproof conform``'s run for people (plain lines, a pipe's too) or as JSON.

The run holds everything (``checker/conform/result.py::ConformRun``; ``--all``'s
``checker/upstream/matrix.py::ConformMatrix``); this only prints it. Long values (the
exercised functions, the untaken transitions) are wrapped so no line runs past 100.

After "your code behaves as ..." it says what the variant means for a deployment, so
"conforms" never reads as "safe" (issue 41): the variant's ``[expect]`` table (``check
--all`` holds every variant to it) and the length of its stored counterexample in the
regression corpus (``traces/``, kept true by
``tests/checker/conformance/test_replay_corpus.py``), so saying it costs no model run.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from kvproof.checker.conform.result import ConformRun

WIDTH = 100


def _say(text: str, indent: str = "  ") -> None:
    for line in textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  "):
        print(line)


def render(run: ConformRun) -> None:
    if run.raised is not None:
        verdict = "RAISED inside the engine's code"
    elif run.diverged:
        verdict = f"DIVERGES ({'switch ' + repr(run.switch) if run.switch else 'unexplained'})"
    else:
        verdict = "conforms"
    _say(f"{run.variant} vs {run.engine} {run.release} (adapter {run.adapter}): {verdict}", "")
    if run.raised is None and not run.diverged:
        from kvproof.spec.variant import load_variant

        _say(f"your code behaves as {run.variant}, {what_it_means(load_variant(run.variant))}")
    faults = "faults on" if run.faults else "faults off (--no-faults)"
    _say(
        f"{run.walks} walks ({run.trivial} trivial), {run.steps} steps, "
        f"{run.seconds:.2f} s, {faults}"
    )
    if run.coverage is not None:
        cov = run.coverage
        _say(
            f"coverage: {cov.exercised} of {cov.reachable} reachable abstract transitions "
            f"({cov.ratio:.0%})" + (f"; not taken: {', '.join(cov.missing)}" if cov.missing else "")
        )
    if run.events:
        _say("events: " + ", ".join(f"{k} {v}" for k, v in run.events.items()))
    # One setting a line: three env names on one line made a 221-character line (issue 41).
    _say("env:")
    for k, v in run.env.items():
        _say(f"  {k}={v} ({run.env_source[k]})")
    made = ", ".join(f"{k} {v}" for k, v in run.decisions.items())
    _say(f"the code decided: {made}")
    for name, counts in run.pages.items():
        sent = "nothing" if counts.sent is None else counts.sent
        _say(
            f"pages, {counts.prompt_tokens}-token prompt ({name.replace('_', '-')}): "
            f"decode reserves {counts.reserved}, prefill sends {sent}"
        )
    if run.diagnosis is not None:
        _say(run.diagnosis.headline)
    for line in run.detail:
        _say(line)
    for path in run.files:
        _say(f"trace: {path}")


def render_matrix(m: Any) -> None:
    from kvproof.checker.conform.matrix import markdown

    print(markdown(m))
    _say(f"{len(m.cells)} runs, {m.traces} walks each, {m.seconds:.1f} s", "")
    for c in m.cells:
        if c.column == "listed" and c.mark != "ok":
            _say(f"LISTED BUT {c.mark.upper()}: {c.variant} on {c.release}", "")


LEAKS = ("isolation", "no_stray_write")


def _steps(name: str, invariant: str, folder: Path) -> int | None:
    path = folder / f"{name}.{invariant}.jsonl"
    if not path.is_file():
        return None
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip())


def what_it_means(variant: Any, folder: Path | None = None) -> str:
    """What ``variant`` means for a deployment, in one clause: ``which leaks (no_stray_write
    violated in 6 steps)``, ``which is unsafe (...)`` or ``which is safe under ...``."""
    broken = [k for k, v in variant.expect.items() if v == "violated"]
    if not broken:
        under = list(getattr(variant, "assume", {}) or {})
        lively = [k for k, v in getattr(variant, "expect_liveness", {}).items() if v == "violated"]
        said = "which is safe" + (f" under {', '.join(under)}" if under else "")
        return said + (f", though {', '.join(lively)} can fail" if lively else "")
    from kvproof.checker.traces.corpus import TRACES_DIR  # here: the corpus module loads Z3

    found = [(inv, _steps(variant.name, inv, folder or TRACES_DIR)) for inv in broken]
    known = sorted((s, inv) for inv, s in found if s is not None)
    inv, steps = (known[0][1], known[0][0]) if known else (broken[0], None)
    how = f"{inv} violated" + (f" in {steps} steps" if steps else "")
    word = "leaks" if any(b in LEAKS for b in broken) else "is unsafe"
    return f"which {word} ({how})"
