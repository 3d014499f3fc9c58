"""The files ``check`` writes for a variant: its counterexamples as traces and HTML pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.verify.checking import VariantCheck


def write_traces(out: Path, check: VariantCheck) -> list[Path]:
    """Each counterexample as ``.jsonl`` and ``.itf.json``; returns the files written."""
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in _violated(check):
        stem = out / f"{check.variant.name}.{r.invariant}"
        write_jsonl(r.trace, Path(f"{stem}.jsonl"), protocol=check.protocol)
        write_itf(r.trace, Path(f"{stem}.itf.json"), check.protocol)
        files += [Path(f"{stem}.jsonl"), Path(f"{stem}.itf.json")]
    return files


def write_html(out: Path, check: VariantCheck) -> list[Path]:
    """One report per violated invariant (model side: ``check`` never runs the engine)."""
    from kvproof.checker.report.html_page import trace_page, write

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in _violated(check):
        path = out / f"{check.variant.name}.{r.invariant}.html"
        write(path, trace_page(r.trace, check.protocol, variant=check.variant))
        files.append(path)
    return files


def _violated(check: VariantCheck) -> list[Any]:
    """The BMC results with a counterexample, in the check's order."""
    return [r for r in check.bmc.results if r.trace is not None]


def write_lassos(out: Path | None, html: Path | None, check: Any) -> list[Path]:
    """A liveness check's fair lassos (``checker/verify/liveness.py``), one per violated
    property: ``.jsonl`` and ``.itf.json`` under ``out`` (their loop recorded, for
    ``kvproof replay``), an HTML page with the loop drawn under ``html``."""
    from kvproof.checker.report.html_page import trace_page, write
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    files: list[Path] = []
    lassos = [r for r in check.result.results if r.trace is not None]
    for folder in (out, html):
        if folder is not None and lassos:
            folder.mkdir(parents=True, exist_ok=True)
    for r in lassos:
        name = f"{check.variant.name}.{r.property}"
        if out is not None:
            write_jsonl(r.trace, out / f"{name}.jsonl", protocol=check.protocol)
            write_itf(r.trace, out / f"{name}.itf.json", check.protocol)
            files += [out / f"{name}.jsonl", out / f"{name}.itf.json"]
        if html is not None:
            write(html / f"{name}.html", trace_page(r.trace, check.protocol, variant=check.variant))
            files.append(html / f"{name}.html")
    return files
