"""``kvproof check --liveness`` as one library call: ``check_liveness_of(...)`` returns a
``LivenessRun`` (issue #29); ``expectations`` is the liveness half of ``check --all``.

One call per variant to ``checker/verify/liveness.py`` (the complete fair-lasso search at
2 requests and 1 page, and the necessity of each fairness assumption in force). Exit codes
as ``check``: 0 every property holds (with ``--all``: every verdict matches ``[expect]``),
1 a fair lasso (or a mismatch), 2 bad input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.checker.runs.progress import QUIET, Progress
from kvproof.checker.verify.liveness import LivenessCheck, check_liveness, to_json
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class LivenessRun:
    checks: tuple[LivenessCheck, ...]
    docs: tuple[dict[str, Any], ...]  # each variant's {"variant", "liveness"} object
    gate: bool = False  # --all: the exit code is the expectations' verdict
    files: tuple[Path, ...] = ()  # the lassos written (--out, --html)

    @property
    def exit_code(self) -> int:
        if self.gate:
            return 0 if all(c.all_match for c in self.checks) else 1
        return 1 if any(c.violated for c in self.checks) else 0

    def to_json(self) -> Any:
        return list(self.docs) if (self.gate or len(self.docs) > 1) else self.docs[0]


def split_names(names: Sequence[str] | None, protocol: Any = None) -> tuple[list[str], list[str]]:
    """``--invariant`` names: (safety invariants, liveness properties)."""
    from kvproof.spec.liveness import LIVENESS

    lively = set(LIVENESS) if protocol is None else {p.name for p in protocol.liveness}
    names = list(names or [])
    return [n for n in names if n not in lively], [n for n in names if n in lively]


def check_mixed(safety: list[str], live: list[str], liveness_flag: bool) -> None:
    if live and safety:
        raise KvproofInputError(
            f"--invariant names safety invariants ({', '.join(safety)}) and liveness"
            f" properties ({', '.join(live)}): check them in two runs",
            "--invariant",
        )
    if liveness_flag and safety:
        raise KvproofInputError(
            f"--liveness checks liveness properties only, not {', '.join(safety)}",
            "--invariant",
        )


def check_liveness_of(
    names: Sequence[str] = (),
    *,
    every: bool = False,
    variants_dir: Path | None = None,
    properties: tuple[str, ...] | None = None,
    without: tuple[str, ...] = (),
    necessity: bool = True,
    protocol: str | None = None,
    out: Path | None = None,
    html: Path | None = None,
    progress: Progress = QUIET,
) -> LivenessRun:
    """The liveness properties (or ``properties``) of the variants ``names`` (or ``every``)."""
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.handoff.assumptions import active

    user = load_protocol(protocol) if protocol else None
    factory = user.factory if user else None
    variants = resolve_variants(names, every, variants_dir, user)
    for variant in variants:
        active(variant, without)  # each must be one the variant lists
    from kvproof.checker.runs.check_files import write_lassos

    checks, docs, files = [], [], []
    with progress.open("liveness", len(variants)) as report:
        for variant in variants:
            report.stage(variant.name, "liveness")
            check = check_liveness(
                variant, names=properties, without=without, factory=factory, necessity=necessity
            )
            report.done(variant.name, "holds" if not check.violated else "a fair lasso")
            checks.append(check)
            doc = {"variant": variant.name, "liveness": liveness_json(check)}
            written = write_lassos(out, html, check)
            if written:
                doc["files"] = [str(f) for f in written]
            files += written
            docs.append(doc)
    return LivenessRun(tuple(checks), tuple(docs), gate=every, files=tuple(files))


def liveness_json(check: LivenessCheck) -> dict[str, Any]:
    from kvproof.checker.verify.checking import trace_rows

    return to_json(check, trace_rows)


def expectations(variants: Sequence[Any], factory: Any, progress: Progress = QUIET) -> dict:
    """``check --all``: each variant's ``[expect]`` liveness keys, checked. Returns
    variant name -> its ``"liveness"`` JSON (variants without liveness keys are skipped)."""
    out = {}
    lively = [v for v in variants if v.expect_liveness]
    with progress.open("liveness expectations", len(lively)) as report:
        for variant in lively:
            report.stage(variant.name, "liveness")
            check = check_liveness(variant, factory=factory, necessity=False)
            out[variant.name] = liveness_json(check)
            said = "as expected" if check.all_match else "NOT as expected"
            report.done(variant.name, f"liveness {said}")
    return out
