"""``kvproof check`` as one library call: ``check(...)`` returns a ``CheckRun``.

The whole verdict is finished here, not in the CLI (issue #26 item 2): BMC and proofs per
variant (``checker/verify/check_pool.py``), the complete search when asked for or when the
check would end on "unknown" (``checker/verify/completing.py``), the files written, the
``--all`` rule (every verdict matches its variant's expectation) and the exit code.
``checker/cli/check.py`` parses, calls ``check`` and renders (``render_check.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvproof.checker.runs.progress import QUIET, Progress
from kvproof.checker.verify.checking import VariantCheck
from kvproof.checker.verify.completing import CompleteRun


@dataclass(frozen=True)
class CheckOptions:
    """What ``kvproof check`` takes besides the variants (its flags, by the same names)."""

    requests: int = 3
    pages: int = 6
    depth: int | None = None  # None: each variant's bmc_depth
    invariants: tuple[str, ...] | None = None  # None: every invariant
    prove: str = "auto"  # "auto" (fixed variants with strengthening), "always", "never"
    without: tuple[str, ...] = ()  # assumptions dropped
    necessity: bool = True  # test whether each assumption in force is needed
    complete: bool = False  # also run the complete search at requests/pages
    budget: float | None = None  # seconds for the complete search (None: its default)
    protocol: str | None = None  # a user protocol's 'module:attr'
    workers: int | None = None  # processes (None: one per core, at most one per variant)
    ray: str | None = None  # a Ray address (checker/distrib/options.py), or None
    out: Path | None = None  # traces (.jsonl, .itf.json) of each counterexample
    html: Path | None = None  # an HTML report per violated invariant
    junit: Path | None = None
    sarif: Path | None = None


@dataclass(frozen=True)
class VariantRun:
    """One variant's check, its complete search (if any) and its files; ``data`` is its
    ``--json`` object, built once (``checking.to_json`` plus ``complete`` and ``files``)."""

    check: VariantCheck
    data: dict[str, Any]
    complete: CompleteRun | None = None
    files: tuple[Path, ...] = ()

    @property
    def complete_violated(self) -> bool:
        return self.complete is not None and self.complete.result.verdict == "violated"

    @property
    def mismatch(self) -> bool:
        """Under ``--all``, a complete counterexample to an invariant expected to hold is a
        mismatch like BMC's (a buggy variant's expected violation is not)."""
        if not self.complete_violated:
            return False
        broken = self.data["complete"].get("violated")
        return self.check.variant.expect.get(broken) == "holds"


@dataclass(frozen=True)
class CheckRun:
    variants: tuple[VariantRun, ...]
    gate: bool = False  # --all: the exit code is the expectations' verdict
    junit: Path | None = None
    sarif: Path | None = None
    # --all: variant -> its [expect] liveness keys checked (``liveness_run.expectations``)
    liveness: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def checks(self) -> list[VariantCheck]:
        return [v.check for v in self.variants]

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file written, traces and pages first, then the JUnit and SARIF reports."""
        reports = tuple(p for p in (self.junit, self.sarif) if p is not None)
        return tuple(f for v in self.variants for f in v.files) + reports

    @property
    def exit_code(self) -> int:
        if self.gate:
            ok = all(v.check.all_match and not v.mismatch for v in self.variants)
            ok = ok and all(d["matches_expectation"] for d in self.liveness.values())
            return 0 if ok else 1
        bad = any(v.check.violated or v.complete_violated for v in self.variants)
        return 1 if bad else 0

    def to_json(self) -> Any:
        """The ``--json`` document: one object for one variant, a list for ``--all`` or
        several (the shape ``tests/checker/golden/check_all.json`` pins)."""
        docs = [v.data for v in self.variants]
        return docs if (self.gate or len(docs) > 1) else docs[0]


def check(
    names: Sequence[str] = (),
    *,
    every: bool = False,
    variants_dir: Path | None = None,
    options: CheckOptions = CheckOptions(),
    progress: Progress = QUIET,
) -> CheckRun:
    """Check the variants ``names`` (or ``every`` one in ``variants_dir``)."""
    from kvproof.checker.distrib.options import executor_for
    from kvproof.checker.report.check_report import outcome
    from kvproof.checker.report.gate import write_junit, write_sarif
    from kvproof.checker.verify.check_pool import run_jobs
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants

    user = load_protocol(options.protocol) if options.protocol else None
    variants = resolve_variants(names, every, variants_dir, user)
    if options.without:
        from kvproof.model.handoff.assumptions import active

        for variant in variants:
            active(variant, options.without)  # each must be one the variant lists
    jobs = [_job(variant, options) for variant in variants]
    workers = options.workers or max(1, min(os.cpu_count() or 1, len(jobs)))
    ray = executor_for(options.ray, workers)
    try:
        with progress.open("checking variants", len(jobs)) as report:
            checks = run_jobs(
                jobs,
                workers=workers,
                factory=user.factory if user else None,
                on_done=lambda c: report.done(c.variant.name, outcome(c)),
                executor=ray,
                progress=report,
            )
    finally:
        if ray is not None:
            ray.close()
    runs = tuple(_finish(c, options, progress) for c in checks)
    lively: dict[str, dict[str, Any]] = {}
    if every and not options.invariants:  # every variant's [expect] liveness keys (#29)
        from kvproof.checker.runs.liveness_run import expectations

        lively = expectations(variants, user.factory if user else None, progress)
        for v in runs:
            if v.check.variant.name in lively:
                v.data["liveness"] = lively[v.check.variant.name]
    if options.junit:
        write_junit(list(checks), options.junit, gate=every)
    if options.sarif:
        write_sarif(list(checks), options.sarif)
    return CheckRun(runs, gate=every, junit=options.junit, sarif=options.sarif, liveness=lively)


def _job(variant: Any, options: CheckOptions) -> Any:
    from kvproof.checker.verify.check_pool import CheckJob

    return CheckJob(
        variant,
        options.requests,
        options.pages,
        options.depth if options.depth is not None else variant.bmc_depth,
        options.invariants,
        options.prove,
        without=options.without,
        necessity=options.necessity,
        protocol=options.protocol,
        depth_given=options.depth is not None,
    )


def _finish(check: VariantCheck, options: CheckOptions, progress: Progress) -> VariantRun:
    """The variant's ``--json`` object, its complete search and its files."""
    from kvproof.checker.runs.check_files import write_html, write_traces
    from kvproof.checker.verify import checking

    data = checking.to_json(check)
    done = _complete(check, options, progress)
    if done is not None:
        data["complete"] = done.to_json()
        if done.result.trace is not None:
            data["complete"]["trace"] = checking.trace_rows(check.protocol, done.result.trace)
    files: list[Path] = []
    if options.out:
        files += write_traces(options.out, check)
    if options.html:
        files += write_html(options.html, check)
    if files:
        data["files"] = [str(f) for f in files]
    return VariantRun(check, data, done, tuple(files))


def _complete(check: VariantCheck, options: CheckOptions, progress: Progress) -> Any:
    """The complete search, when asked for (``--complete``, a variant's ``complete = true``)
    or when the check would end on unknown (``completing.py``), or None."""
    from kvproof.checker.verify.completing import FALLBACK_BUDGET_S, reason_for, run_complete

    reason = reason_for(check, options.complete)
    if reason is None:
        return None
    budget = options.budget or (FALLBACK_BUDGET_S if reason == "fallback" else 120.0)
    name = check.variant.name
    with progress.open(f"complete check of {name}", None) as report:
        report.stage(name, "complete")
        done = run_complete(
            check,
            {"Req": options.requests, "Page": options.pages},
            reason,
            budget_s=budget,
            protocol_spec=options.protocol,
        )
        report.done(name, f"complete search: {done.result.verdict}")
    return done
