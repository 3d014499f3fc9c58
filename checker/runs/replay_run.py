"""``kvproof replay`` as one library call: ``replay(...)`` returns a ``ReplayRun``.

A trace file (``.jsonl`` or ``.itf.json``) is read and checked against its own variant's
protocol before the engine (and torch) is loaded; then it is forced on the reference engine
(``checker/conformance/replay.py``). ``replay_rows`` is the same replay, kept as the plain
rows an HTML page shows (``fuzz --html``, and ``kvproof report``: ``report(...)`` returns a
``ReportRun``, the page written).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class ReplayRun:
    report: Any  # kvproof.checker.conformance.verdict.ReplayReport

    @property
    def exit_code(self) -> int:
        return int(self.report.exit_code)

    def to_json(self) -> dict[str, Any]:
        from kvproof.checker.render.replay import replay_json

        return replay_json(self.report)


def replay(
    path: str,
    variant_name: str | None = None,
    *,
    drain: bool = True,
    max_new_tokens: int = 32,
    loops: int = 3,
) -> ReplayRun:
    """Replay the trace at ``path`` on ``variant_name``'s engine (default: the trace's own)."""
    from kvproof.checker.traces.tracefile import check_against
    from kvproof.spec.variant import load_variant

    # Bad input is found before the engine (and torch) is loaded.
    trace, carried, own = _with_own_protocol(path, variant_name)
    variant = load_variant(variant_name) if variant_name else carried
    # Names and sizes must fit the trace's own protocol (a different variant may lack an
    # action: that is "not enabled", not bad input).
    check_against(trace, own, path)
    import torch

    from kvproof.checker.conformance.replay import replay_trace

    torch.set_num_threads(1)  # tiny models: threads only add wake-up latency
    return ReplayRun(
        replay_trace(trace, variant, drain=drain, max_new_tokens=max_new_tokens, loops=loops)
    )


@dataclass(frozen=True)
class ReportRun:
    out: Path  # the page written
    summary: dict[str, Any] | None  # replay_rows' verdict; None without a replay
    exit_code: int = 0  # written (bad input raises: exit 2)


def report(
    path: str,
    out: Path | str,
    variant_name: str | None = None,
    *,
    replay: bool = True,
    max_new_tokens: int = 32,
) -> ReportRun:
    """Draw the trace at ``path`` as the HTML page ``out``, replayed (unless not ``replay``)
    on ``variant_name``'s engine (default: the trace's own)."""
    from kvproof.checker.report.html_page import trace_page
    from kvproof.checker.traces.tracefile import check_against
    from kvproof.spec.files import write_text_atomic
    from kvproof.spec.variant import load_variant

    if max_new_tokens < 1:
        raise KvproofInputError("must be >= 1", "--max-new-tokens")
    trace, own, protocol = _with_own_protocol(path, variant_name)
    check_against(trace, protocol, path)
    rows = summary = None
    if replay:
        engine_variant = load_variant(variant_name) if variant_name else own
        rows, summary = replay_rows(trace, engine_variant, max_new_tokens)
    page = trace_page(trace, protocol, variant=own, responses=rows, replay_summary=summary)
    write_text_atomic(out, page)
    return ReportRun(Path(out), summary)


def _with_own_protocol(path: str, variant_name: str | None) -> tuple[Any, Any, Any]:
    """The trace at ``path``, the variant it carries, and that variant's protocol as
    written: the liveness build for a lasso (``check --liveness --out``), whose steps may
    include a crash (E20)."""
    from kvproof.checker.traces.carried_variant import trace_variant
    from kvproof.model.handoff import protocol_of

    trace = load_trace(path, variant_name)
    carried = trace_variant(trace.variant, trace.meta, path)
    return trace, carried, protocol_of(carried, assumed=False, liveness=trace.loop is not None)


def load_trace(path: str, variant_name: str | None) -> Any:
    """A trace from ``.jsonl`` or ``.itf.json`` (ITF needs the variant's protocol)."""
    from kvproof.checker.traces.carried_variant import trace_variant
    from kvproof.checker.traces.itf import read_doc, read_itf
    from kvproof.checker.traces.tracefile import read_jsonl
    from kvproof.model.handoff import protocol_of
    from kvproof.spec.variant import load_variant

    p = Path(path)
    if not p.exists():
        raise KvproofInputError("no such trace file", path)
    if p.name.endswith(".itf.json"):
        doc = read_doc(p)
        meta, named = doc.get("#meta", {}), variant_name
        if not named:  # the variant the file names in '#meta.variant'
            if not isinstance(meta, dict):
                raise KvproofInputError("'#meta' must be an object", str(p))
            named = meta.get("variant")
            if named is None:
                raise KvproofInputError("an ITF trace needs --variant", path)
            if not (isinstance(named, str) and named):
                raise KvproofInputError("'#meta.variant' must be a variant name", str(p))
        # --variant wins; else the variant the file carries, else the catalog's by name.
        variant = load_variant(named) if variant_name else trace_variant(named, meta, path)
        lasso = doc.get("loop") is not None  # a liveness lasso: with crash (E20)
        return read_itf(p, protocol_of(variant, assumed=False, liveness=lasso))
    return read_jsonl(p)


def replay_rows(trace: Any, variant: Any, max_new_tokens: int = 32) -> tuple[list, dict]:
    """Replay ``trace`` on the engine: (response rows, summary) as plain data."""
    import torch

    from kvproof.checker.conformance.replay import replay_trace
    from kvproof.checker.render.replay import SHOWS

    torch.set_num_threads(1)  # tiny models: threads only add wake-up latency
    rep = replay_trace(trace, variant, max_new_tokens=max_new_tokens)
    if rep.divergence is not None:
        line = f"DIVERGENCE at step {rep.divergence.step}: {rep.divergence.reason}"
    elif rep.not_enabled:
        line = f"not enabled on {variant.name}: {rep.not_enabled} ({rep.why_not})"
    elif rep.leak:
        line = f"LEAK on the engine ({variant.name}): {rep.steps_applied} steps applied"
    elif rep.lasso is not None and rep.lasso.repeats:
        line = f"{rep.lasso.summary()} ({variant.name})"
    elif rep.exit_code:
        line = f"{SHOWS[rep.shows]} ({variant.name}, {rep.steps_applied} steps applied)"
    else:
        line = f"no divergence, no leak on {variant.name} ({rep.steps_applied} steps applied)"
    rows = [r.to_json() for r in rep.responses]
    return rows, {"line": line, "exit_code": rep.exit_code, "variant": variant.name}
