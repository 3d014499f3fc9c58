"""``kvproof check`` as one library call: ``check(...)`` returns a ``CheckRun``.

The whole verdict is finished here, not in the CLI: each variant's plan
(``checker/verify/plan.py``: BMC, proof, necessity, the complete search, liveness) run by
the one driver (``checker/verify/driver.py``) on this process, local forks or Ray
(``check_pool.py``); then the files written (traces, HTML pages, JUnit, SARIF), the
``--all`` rule (every verdict matches its variant's expectation) and the exit code.
``checker/cli/check.py`` parses, calls ``check`` and renders (``checker/render/check.py``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.checker.runs.progress import QUIET, Progress
from kvproof.checker.verify.plan import CheckOptions
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.spec.variant import Variant

__all__ = ["CheckOptions", "CheckRun", "check", "check_variant"]


@dataclass(frozen=True)
class CheckRun:
    variants: tuple[VariantVerdict, ...]
    gate: bool = False  # --all: the exit code is the expectations' verdict
    junit: Path | None = None  # the reports written
    sarif: Path | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file written, traces and pages first, then the JUnit and SARIF reports."""
        reports = tuple(p for p in (self.junit, self.sarif) if p is not None)
        return tuple(f for v in self.variants for f in v.files) + reports

    @property
    def exit_code(self) -> int:
        if self.gate:
            return 0 if all(v.all_match for v in self.variants) else 1
        return 1 if any(v.violated for v in self.variants) else 0

    def to_json(self) -> Any:
        """The ``--json`` document (``checker/render/check_json.py``)."""
        from kvproof.checker.render.check_json import run_json

        return run_json(self)


def check(
    names: Sequence[str] = (),
    *,
    every: bool = False,
    variants_dir: Path | None = None,
    options: CheckOptions | None = None,
    progress: Progress = QUIET,
) -> CheckRun:
    """Check the variants ``names`` (or ``every`` one in ``variants_dir``) with ``options``
    (None: the defaults of ``kvproof check``)."""
    options = options or CheckOptions()
    from kvproof.checker.verify.plan import check_mixed
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.spec.names import require_assumed

    # Bad names are exit 2 before Z3 and torch load (tests/spec/test_names.py).
    check_mixed(options)
    user = load_protocol(options.protocol) if options.protocol else None
    variants = resolve_variants(names, every, variants_dir, user)
    for variant in variants:  # each --without must be one the variant lists
        require_assumed(variant.name, tuple(variant.assume), options.without)
    from kvproof.checker.distrib.executor import executor_for
    from kvproof.checker.render.check_files import write_files
    from kvproof.checker.render.check_text import outcome
    from kvproof.checker.verify.check_pool import run_jobs
    from kvproof.checker.verify.driver import prepare

    factory = user.factory if user else None
    jobs = [prepare(v, options, factory, every=every) for v in variants]
    workers = options.workers or max(1, min(os.cpu_count() or 1, len(jobs)))
    with (
        executor_for(options.ray, workers) or nullcontext() as ray,
        progress.open("checking variants", len(jobs)) as report,
    ):
        verdicts = run_jobs(
            jobs,
            workers=workers,
            on_done=lambda v: report.done(v.variant.name, outcome(v)),
            executor=ray,
            progress=report,
        )
    done = tuple(
        dataclasses.replace(v, files=write_files(v, options.out, options.html)) for v in verdicts
    )
    return _reported(CheckRun(done, gate=every), options)


def _reported(run: CheckRun, options: CheckOptions) -> CheckRun:
    """``run`` with its JUnit and SARIF reports written (a safety check's), both from the
    ``--json`` objects, built once here."""
    if not (options.junit or options.sarif):
        return run
    from kvproof.checker.render.check_gate import write_junit, write_sarif
    from kvproof.checker.render.check_json import variant_json

    checked = [(v, variant_json(v)) for v in run.variants if v.invariants is not None]
    if not checked:
        return run  # a liveness-only check writes no gate report
    if options.junit:
        write_junit(checked, options.junit, gate=run.gate)
    if options.sarif:
        write_sarif(checked, options.sarif)
    return dataclasses.replace(run, junit=options.junit, sarif=options.sarif)


def check_variant(
    variant: Variant,
    *,
    depth: int | None = None,
    invariants: Sequence[str] | None = None,
    options: CheckOptions | None = None,
) -> VariantVerdict:
    """One variant object (a notebook's, perhaps edited with ``dataclasses.replace``),
    checked in this process; by default BMC alone (no proof, no necessity), to ``depth`` or
    the variant's own depth, over ``invariants`` or all of them."""
    from kvproof.checker.verify.driver import prepare, run_job

    opts = options or CheckOptions(
        depth=depth,
        invariants=tuple(invariants) if invariants else None,
        prove="never",
        necessity=False,
    )
    job, protocols = prepare(variant, opts)
    return run_job(job, protocols)
