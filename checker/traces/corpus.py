"""The regression corpus in ``traces/``: every catalog variant's BMC counterexamples.

``generate()`` runs BMC on each variant and writes one ``<variant>.<invariant>.jsonl`` per
violated invariant (with the model's states), plus the ITF rendering of the incident's
trace; each header says what the trace shows a client when replayed on the engine (a leak,
a wrong answer, or an invariant broken on the engine's state only: ``shows.py``).
``load()`` reads them back.

``python -m kvproof.checker.traces.corpus`` regenerates them into a temporary folder and
compares with ``traces/`` (exit 1 on a difference); ``--write`` overwrites the tracked files,
``--out DIR`` writes elsewhere. Each trace is written in a canonical form
(``canonical``); run from a fresh process (as above) the files are the same every time
(checked with different hash seeds). A process that loaded other libraries first (torch,
pytest) can get other, equally short traces from Z3.

Z3's choice among equally short counterexamples is not stable across processes (the same
trace comes back on page 0 in one run and on page 1 in another; the initial values of a
request the trace never touches vary too). ``canonical`` picks one representative: pages
renamed in order of first use (only for a sort the protocol declares symmetric), and the
rigid values of elements no step names set to their defaults. The result is re-checked by
the concrete interpreter; if it does not end in the same violation, the trace is kept.

Witnesses: longer counterexamples for a sharper target than an invariant.
BMC's shortest counterexample breaks an invariant of the model; it need not be the run in
which a *client* sees the bug. Decode's radix-cache race (SGLang #38319) is the case: its
17-step isolation trace has two requests, and the page freed while the tree still maps it
is overwritten by the hit request's own later chunk, so the engine answers with its own KV
at the wrong position (a wrong answer, no other tenant's data). Another tenant's KV in the
shared page needs a third request, four steps more than any isolation trace.

A witness names that target as a predicate on the model's state (here: a request reads a
page it shares from the tree while the page holds another request's KV) and is found by
breadth-first search (``model.explore``: deterministic, so the stored file is the same
every time, and shortest by construction). The trace's last state must break the
invariant the witness illustrates, checked here on the variant's own protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvproof.checker.traces.itf import write_itf
from kvproof.checker.traces.shows import expected
from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace, replay
from kvproof.model.search.bmc import bmc
from kvproof.model.search.explore import explore
from kvproof.spec.variant import list_variants, load_variant

TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
SIZES = {"Req": 2, "Page": 2}
INCIDENT = "sglang-0.5.19-pd.isolation"


def generate(folder: Path = TRACES_DIR, *, depth: int | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for v in list_variants():
        protocol = protocol_of(v)  # under the variant's assumptions
        result = bmc(protocol, SIZES, depth or v.bmc_depth, variant=v.name)
        searches: dict[bool, Any] = {}
        for r in result.results:
            if r.trace is None:
                continue
            path = folder / f"{v.name}.{r.invariant}.jsonl"
            trace = _deterministic(r.trace, r.invariant, protocol, v.name, searches)
            trace = _with_shows(trace, path.stem, r.invariant)
            write_jsonl(trace, path, protocol=protocol)
            written.append(path)
            if path.stem == INCIDENT:
                write_itf(trace, folder / f"{path.stem}.itf.json", protocol)
                written.append(folder / f"{path.stem}.itf.json")
    for w in WITNESSES:  # longer runs in which a client sees what BMC's shortest hides
        protocol = protocol_of(load_variant(w.variant))
        trace = canonical(w.find(protocol), protocol)
        path = folder / f"{w.stem}.jsonl"
        write_jsonl(_with_shows(trace, w.stem, w.invariant), path, protocol=protocol)
        written.append(path)
    return written


def _deterministic(
    found: Trace, invariant: str, protocol: Protocol, variant: str, searches: dict[bool, Any]
) -> Trace:
    """A trace as long as BMC's, chosen without Z3: Z3's pick among equally short traces
    differs between processes. Breadth-first search (``model.explore``, deterministic order)
    gives one of the same length: first without earlier violations (BMC's primary trace),
    else any; failing both, BMC's own trace in canonical form."""
    for stop in (True, False):
        if stop not in searches:
            searches[stop] = explore(protocol, SIZES, variant=variant, stop_at_violation=stop)
        cand = searches[stop].counterexamples.get(invariant)
        if cand is not None and len(cand.steps) == len(found.steps):
            return canonical(replace(cand, violated=invariant, meta=dict(found.meta)), protocol)
    return canonical(found, protocol)


def _with_shows(trace: Trace, stem: str, invariant: str) -> Trace:
    """The header says what the trace shows a client on the engine (``shows.py``)."""
    shows = expected(stem, invariant)
    return trace if shows is None else replace(trace, meta={**trace.meta, **shows})


def canonical(trace: Trace, protocol: Protocol) -> Trace:
    """``trace`` with symmetric elements renamed by first use and untouched ones defaulted."""
    out = trace
    for sort in protocol.symmetric:
        out = _rename(out, protocol, sort)
    out = _default_untouched(out, protocol)
    return out if _breaks(out, protocol, trace.violated) else trace


def _uses(trace: Trace, protocol: Protocol) -> dict[str, list[int]]:
    """The elements the steps name, by sort, in order of first use."""
    used: dict[str, list[int]] = {}
    for inst in trace.steps:
        for s, a in zip(protocol.action(inst.action).params, inst.args, strict=True):
            if a not in used.setdefault(s, []):
                used[s].append(a)
    return used


def _rename(trace: Trace, protocol: Protocol, sort: str) -> Trace:
    order = _uses(trace, protocol).get(sort, [])
    order += [x for x in range(trace.sizes[sort]) if x not in order]
    new = {old: n for n, old in enumerate(order)}
    if all(k == v for k, v in new.items()):
        return trace

    def renamed(sorts: tuple[str, ...], args: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(new[a] if s == sort else a for s, a in zip(sorts, args, strict=True))

    steps = tuple(
        ActionInstance(inst.action, renamed(protocol.action(inst.action).params, inst.args))
        for inst in trace.steps
    )
    init = {
        var: {renamed(protocol.var(var).args, key): v for key, v in cells.items()}
        for var, cells in trace.init.items()
    }
    return replace(trace, steps=steps, init=init)


def _default_untouched(trace: Trace, protocol: Protocol) -> Trace:
    used = _uses(trace, protocol)
    init = {}
    for var, cells in trace.init.items():
        v = protocol.var(var)
        init[var] = {
            key: (
                val
                if all(a in used.get(s, ()) for s, a in zip(v.args, key, strict=True))
                else v.default
            )
            for key, val in cells.items()
        }
    return replace(trace, init=init)


def _breaks(trace: Trace, protocol: Protocol, invariant: str | None) -> bool:
    """``trace`` replays from an initial state to one that breaks ``invariant`` (None: any
    end)."""
    concrete = Concrete(Instance(protocol, trace.sizes))
    try:
        states = replay(trace, concrete)
    except ReplayError:
        return False
    if not concrete.holds(protocol.init, states[0]):
        return False
    return invariant is None or invariant in concrete.violated(states[-1])


def _no_foreign_shared_read(s: Any) -> Any:
    """No request has read a page it shares from the radix tree while the page held KV of
    another request of the instance (the negation is the target)."""
    return s.not_(
        s.exists(
            "Req",
            lambda r: s.exists(
                "Page",
                lambda p: s.exists(
                    "Req",
                    lambda q: s.and_(s.leaked(r), s.shares(r, p), s.ne(q, r), s.holds(p, q)),
                ),
            ),
        )
    )


@dataclass(frozen=True)
class Witness:
    variant: str
    name: str  # the file is ``<variant>.<invariant>.<name>.jsonl``
    invariant: str  # the invariant its last state breaks
    sizes: dict[str, int]
    target: Callable[[Any], Any]  # a state predicate that must become false

    @property
    def stem(self) -> str:
        return f"{self.variant}.{self.invariant}.{self.name}"

    def find(self, protocol: Protocol) -> Trace:
        """The shortest run to the target (a ``RuntimeError`` if none: the model changed)."""
        sharp = replace(protocol, invariants=(Invariant(self.name, self.target),))
        # Both symmetric sorts (requests and pages) and a stop at the first target state:
        # BFS numbers states in the same order either way, so the trace is the one the
        # whole search would report, in a fraction of the states (issue #30).
        sym = tuple(s for s in protocol.symmetric if self.sizes.get(s, 0) > 1)
        found = explore(
            sharp,
            self.sizes,
            variant=self.variant,
            stop_at_violation=True,
            until_found=True,
            symmetry=sym,
        )
        trace = found.counterexamples.get(self.name)
        if trace is None:
            raise RuntimeError(f"witness {self.stem}: no run reaches the target")
        if not _breaks(trace, protocol, self.invariant):
            raise RuntimeError(f"witness {self.stem}: its last state keeps {self.invariant}")
        return replace(trace, violated=self.invariant)


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "sglang-pd-decode-radix-race",
        "foreign",
        "isolation",
        {"Req": 3, "Page": 2},
        _no_foreign_shared_read,  # what it shows: shows.py, by its stem
    ),
)


def load(folder: Path = TRACES_DIR) -> dict[str, Trace]:
    """Every stored trace by file stem."""
    return {p.stem: read_jsonl(p) for p in sorted(folder.glob("*.jsonl"))}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m kvproof.checker.traces.corpus")
    parser.add_argument("--write", action="store_true", help="overwrite the tracked traces/")
    parser.add_argument("--out", type=Path, help="write the corpus to this folder instead")
    args = parser.parse_args(argv)
    if args.write or args.out:
        for p in generate(args.out or TRACES_DIR):
            print(p)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        differ = [
            p.name
            for p in fresh
            if not (TRACES_DIR / p.name).is_file()
            or (TRACES_DIR / p.name).read_bytes() != p.read_bytes()
        ]
    for name in differ:
        print(f"differs from traces/{name}")
    print(
        f"{len(fresh) - len(differ)} of {len(fresh)} traces as tracked"
        + (" (--write to update)" if differ else "")
    )
    return 1 if differ else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
