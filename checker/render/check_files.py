"""The files ``check`` writes for a variant: each counterexample (and fair lasso) as traces
(``.jsonl`` and ``.itf.json`` under ``--out``) and an HTML page (under ``--html``).

Each is drawn from the states the counterexample carries (``VariantVerdict``): the page and
the trace files show what the search checked, without replaying it again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.trace import Trace


def write_files(v: VariantVerdict, out: Path | None, html: Path | None) -> tuple[Path, ...]:
    """Every counterexample of ``v``: its trace files under ``out``, its page under
    ``html`` (model side: ``check`` never runs the engine); returns the files written."""
    found = _found(v)
    for folder in (out, html):
        # a safety check makes its folders whatever it finds; a liveness one, on a lasso
        if folder is not None and (v.invariants is not None or found):
            folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for name, trace, states, protocol in found:
        stem = f"{v.variant.name}.{name}"
        if out is not None:  # a lasso's loop recorded, for ``kvproof replay``
            from kvproof.checker.traces.itf import write_itf
            from kvproof.checker.traces.tracefile import write_jsonl

            jsonl, itf = out / f"{stem}.jsonl", out / f"{stem}.itf.json"
            write_jsonl(trace, jsonl, protocol=protocol, states=states)
            write_itf(trace, itf, protocol, states)
            files += [jsonl, itf]
        if html is not None:
            from kvproof.checker.report.html_page import trace_page
            from kvproof.spec.files import write_text_atomic

            files.append(html / f"{stem}.html")
            page = trace_page(trace, protocol, variant=v.variant, states=states)
            write_text_atomic(files[-1], page)
    return tuple(files)


def _found(v: VariantVerdict) -> list[tuple[str, Trace, Any, Protocol]]:
    """(name, trace, states, protocol) of each counterexample: BMC's, in the check's order,
    then the fair lassos (on the liveness protocol)."""
    found = []
    if v.invariants is not None:
        assert v.protocol is not None
        for r in v.invariants.results:
            if r.trace is not None:
                found.append((r.invariant, r.trace, r.states, v.protocol))
    if v.liveness is not None and v.invariants is None:
        assert v.liveness.protocol is not None
        for lr in v.liveness.result.results:
            if lr.trace is not None:
                found.append((lr.property, lr.trace, lr.states, v.liveness.protocol))
    return found
