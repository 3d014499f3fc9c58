"""The files ``check`` writes for a variant: its counterexamples as traces and HTML pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.verify.checking import VariantCheck


def write_traces(out: Path, check: VariantCheck) -> list[Path]:
    """Each counterexample as ``.jsonl`` and ``.itf.json``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for r in _violated(check):
        files += _trace_files(out, f"{check.variant.name}.{r.invariant}", r.trace, check.protocol)
    return files


def write_html(out: Path, check: VariantCheck) -> list[Path]:
    """One report per violated invariant (model side: ``check`` never runs the engine)."""
    out.mkdir(parents=True, exist_ok=True)
    return [
        _page(out, f"{check.variant.name}.{r.invariant}", r.trace, check) for r in _violated(check)
    ]


def write_lassos(out: Path | None, html: Path | None, check: Any) -> list[Path]:
    """A liveness check's fair lassos (``checker/verify/liveness.py``), one per violated
    property: ``.jsonl`` and ``.itf.json`` under ``out`` (their loop recorded, for
    ``kvproof replay``), an HTML page with the loop drawn under ``html``."""
    lassos = [r for r in check.result.results if r.trace is not None]
    files: list[Path] = []
    for folder in (out, html):
        if folder is not None and lassos:
            folder.mkdir(parents=True, exist_ok=True)
    for r in lassos:
        name = f"{check.variant.name}.{r.property}"
        if out is not None:
            files += _trace_files(out, name, r.trace, check.protocol)
        if html is not None:
            files.append(_page(html, name, r.trace, check))
    return files


def _trace_files(out: Path, name: str, trace: Any, protocol: Any) -> list[Path]:
    """``trace`` as ``out/name.jsonl`` and ``out/name.itf.json``."""
    from kvproof.checker.traces.itf import write_itf
    from kvproof.checker.traces.tracefile import write_jsonl

    jsonl, itf = out / f"{name}.jsonl", out / f"{name}.itf.json"
    write_jsonl(trace, jsonl, protocol=protocol)
    write_itf(trace, itf, protocol)
    return [jsonl, itf]


def _page(out: Path, name: str, trace: Any, check: Any) -> Path:
    """``trace`` drawn as ``out/name.html`` (model side; a lasso's loop marked)."""
    from kvproof.checker.report.html_page import trace_page, write

    path = out / f"{name}.html"
    write(path, trace_page(trace, check.protocol, variant=check.variant))
    return path


def _violated(check: VariantCheck) -> list[Any]:
    """The BMC results with a counterexample, in the check's order."""
    return [r for r in check.bmc.results if r.trace is not None]
