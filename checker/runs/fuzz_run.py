"""``kvproof fuzz`` as one library call: ``fuzz_variant(...)`` returns a ``FuzzRun``.

Two phases, both here (issue #26 item 2; they were strung across two CLI modules that
imported each other): first the model alone is searched (random walks, no engine, no
torch, ``checker/conformance/model_first.py``); a finding there is saved, handed to
``on_model_finding`` at once (so a shell shows it within a second) and then confirmed on the
engine. Without one, the engine campaign runs (``checker/conformance/fuzz.py``), where
engine-only bugs show. The run's ``--json`` document is built once
(``checker/render/fuzz.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.checker.runs.progress import QUIET, Progress
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant


@dataclass(frozen=True)
class FuzzOptions:
    """What ``kvproof fuzz`` takes besides the variant (its flags, by the same names)."""

    traces: int = 200
    seed: int = 0
    faults: bool = False
    workers: int | None = None  # None: CPUs, at most 4 (conformance/fuzz.py)
    requests: int = 2
    pages: int = 3
    out: Path = Path("kvproof-out")  # the finding's trace goes here
    html: Path | None = None  # and its HTML report here
    engine_only: bool = False  # skip the model-first search
    device: str = "cpu"
    resume: Path | None = None  # campaign folder (conformance/fuzz.py)
    ray: str | None = None  # a Ray address (checker/distrib/executor.py), or None

    @property
    def sizes(self) -> dict[str, int]:
        return {"Req": self.requests, "Page": self.pages}


@dataclass(frozen=True)
class ModelSide:
    """The model-first phase's finding and the engine's verdict on its trace."""

    found: Any  # kvproof.checker.conformance.model_first.ModelFinding
    report: Any  # the engine's ReplayReport of the same trace
    engine_seconds: float

    @property
    def confirmed(self) -> bool:
        r = self.report
        return bool(r.failed and r.divergence is None and r.crash is None)


@dataclass(frozen=True)
class FuzzRun:
    variant: Variant
    options: FuzzOptions
    model: ModelSide | None = None  # the model found something (the campaign did not run)
    result: Any = None  # kvproof.checker.conformance.fuzz.FuzzResult of the campaign
    workers: int = 1  # processes (Ray slots) the campaign ran on
    trace_file: Path | None = None  # the finding's trace
    html: Path | None = None  # the finding's report

    @property
    def finding(self) -> Any:
        return None if self.result is None else self.result.finding

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.trace_file, self.html) if p is not None)

    @property
    def exit_code(self) -> int:
        """1 on a finding (a model-side one always), 0 when every walk was clean."""
        return 1 if self.model is not None else int(self.result.exit_code)

    def to_json(self) -> dict[str, Any]:
        from kvproof.checker.render.fuzz import fuzz_json

        return fuzz_json(self)


def fuzz_variant(
    variant: Variant,
    options: FuzzOptions = FuzzOptions(),
    *,
    progress: Progress = QUIET,
    on_model_finding: Callable[[Any, Path], None] | None = None,
) -> FuzzRun:
    """Fuzz ``variant``: the model first (unless engine-only, on Ray or resumed), then the
    engine campaign. ``on_model_finding(found, trace_file)`` is called before the engine
    confirms a model-side finding."""
    if options.device == "cuda" and options.ray is None:
        import torch

        if not torch.cuda.is_available():
            raise KvproofInputError("no CUDA device here (a Ray cluster's: add --ray)", "--device")
    # A campaign on a cluster or resumed from its folder is the engine's: no model-first pass.
    if not options.engine_only and options.ray is None and options.resume is None:
        done = _model_first(variant, options, on_model_finding)
        if done is not None:
            return done
    return _campaign(variant, options, progress)


def _model_first(
    variant: Variant, options: FuzzOptions, on_found: Callable[[Any, Path], None] | None
) -> FuzzRun | None:
    from kvproof.checker.conformance.model_first import model_search

    found = model_search(
        variant, options.sizes, faults=options.faults, seed=options.seed, max_seconds=0.5
    )
    if found is None:
        return None
    saved = _save(variant, found.trace, options)
    if on_found is not None:
        on_found(found, saved)
    from kvproof.checker.conformance.replay import replay_trace  # the engine: torch, only now

    start = time.perf_counter()
    report = replay_trace(found.trace, variant)  # 32 tokens: a whole canary fits
    side = ModelSide(found, report, time.perf_counter() - start)
    html = _html(variant, found.trace, options, saved)
    return FuzzRun(variant, options, model=side, trace_file=saved, html=html)


def _campaign(variant: Variant, options: FuzzOptions, progress: Progress) -> FuzzRun:
    # Nothing in the model: the engine campaign (loads torch), where engine-only bugs show.
    import torch

    from kvproof.checker.conformance.fuzz import default_workers, fuzz
    from kvproof.checker.distrib.executor import executor_for

    torch.set_num_threads(1)  # tiny models: intra-op threads only add wake-up latency
    workers = options.workers if options.workers is not None else default_workers()
    name = variant.name
    ran = [0]

    def batch(st: Any) -> None:
        # a batch's result is the progress a campaign has: walks inside it are milliseconds
        ran[0] += st.traces
        report.advance(st.traces)
        report.stage(name, "fuzz", f"{ran[0]}/{options.traces} traces")

    with progress.open(f"fuzz {name}", options.traces) as report:
        report.stage(name, "fuzz", f"0/{options.traces} traces")
        with executor_for(options.ray, workers) or nullcontext() as ray:
            result = fuzz(
                variant,
                traces=options.traces,
                seed=options.seed,
                faults=options.faults,
                workers=workers,
                sizes=options.sizes,
                on_batch=batch,
                device=options.device,
                executor=ray,
                resume=options.resume,
            )
            workers = ray.slots if ray is not None else workers
        found = result.finding
        said = f"no finding in {result.stats.traces} traces" if found is None else str(found.kind)
        report.done(name, said, advance=0)
    saved = html = None
    if result.finding is not None:
        saved = _save(variant, result.finding.trace, options)
        html = _html(variant, result.finding.trace, options, saved)
    return FuzzRun(variant, options, result=result, workers=workers, trace_file=saved, html=html)


def _save(variant: Variant, trace: Any, options: FuzzOptions) -> Path:
    """The finding's trace, ``V.fuzz-SEED.jsonl``, or ``V.fuzz-SEED.runN.jsonl`` when an
    earlier run's finding has that name: the trace and its report share the stem, and
    neither overwrites an earlier one."""
    from kvproof.checker.traces.tracefile import write_jsonl
    from kvproof.model.handoff import protocol_of
    from kvproof.spec.files import unused_stem

    places = [(options.out, ".jsonl")]
    if options.html is not None:
        places.append((options.html, ".html"))
    stem = unused_stem(places, f"{variant.name}.fuzz-{options.seed}")
    options.out.mkdir(parents=True, exist_ok=True)
    saved = options.out / f"{stem}.jsonl"
    write_jsonl(trace, saved, protocol=protocol_of(variant))
    return saved


def _html(variant: Variant, trace: Any, options: FuzzOptions, saved: Path) -> Path | None:
    if options.html is None:
        return None
    return write_fuzz_html(options.html, variant, trace, options.seed, stem=saved.stem)


def write_fuzz_html(
    out: Path, variant: Variant, trace: Any, seed: int, *, stem: str | None = None
) -> Path:
    """The finding's report, with the shrunk trace replayed for the engine's answers."""
    from kvproof.checker.report.html_page import trace_page
    from kvproof.checker.runs.replay_run import replay_rows
    from kvproof.model.handoff import protocol_of
    from kvproof.spec.files import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    rows, summary = replay_rows(trace, variant)
    path = out / f"{stem or f'{variant.name}.fuzz-{seed}'}.html"
    page = trace_page(
        trace, protocol_of(variant), variant=variant, responses=rows, replay_summary=summary
    )
    write_text_atomic(path, page)
    return path
