"""The regression corpus in ``traces/``: every catalog variant's BMC counterexamples.

``generate()`` runs BMC on each variant and writes one ``<variant>.<invariant>.jsonl`` per
violated invariant (with the model's states), plus the ITF rendering of the incident's
trace. ``load()`` reads them back. ``python -m kvproof.checker.traces.corpus`` regenerates them.
"""

from __future__ import annotations

from pathlib import Path

from kvproof.checker.traces.itf import write_itf
from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
from kvproof.model.assumptions import handoff_for
from kvproof.model.bmc import bmc
from kvproof.model.trace import Trace
from kvproof.spec.variant import list_variants, load_variant

TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
SIZES = {"Req": 2, "Page": 2}
DEPTH = 12
INCIDENT = "sglang-0.5.19-pd.isolation"


def generate(folder: Path = TRACES_DIR, *, depth: int | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for v in list_variants():
        protocol = handoff_for(v)  # under the variant's assumptions
        result = bmc(protocol, SIZES, depth or v.bmc_depth, variant=v.name)
        for r in result.results:
            if r.trace is None:
                continue
            path = folder / f"{v.name}.{r.invariant}.jsonl"
            write_jsonl(r.trace, path, protocol=protocol)
            written.append(path)
            if path.stem == INCIDENT:
                write_itf(r.trace, folder / f"{path.stem}.itf.json", protocol)
                written.append(folder / f"{path.stem}.itf.json")
    return written


def load(folder: Path = TRACES_DIR) -> dict[str, Trace]:
    """Every stored trace by file stem."""
    return {p.stem: read_jsonl(p) for p in sorted(folder.glob("*.jsonl"))}


def counterpart(trace: Trace) -> str | None:
    return load_variant(trace.variant).counterpart


if __name__ == "__main__":  # pragma: no cover
    for p in generate():
        print(p)
