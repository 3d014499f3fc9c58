"""The model's reachable abstract transitions, remembered on disk: the search behind them
(``coverage.reachable``) takes about 1 s for sglang-0.5.22-pd at its size and 10-20 s for
the variants without ``bounded_transfer`` (300k states), and its answer depends only on
the model, so a run computes it once per model and reads it after.

The key hashes what the answer depends on: the variant file, the sizes, the events
allowed, and the source of the model and of this search (a changed model is a new key).
Files live in ``$XDG_CACHE_HOME/kvproof/conform-reach/`` (default ``~/.cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from kvproof.checker.conform.coverage import Reach, reachable
from kvproof.model.lang.concrete import Concrete
from kvproof.spec.variant import Variant

_HERE = Path(__file__).resolve().parent
_MODEL = _HERE.parent.parent / "model"


def _folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvproof" / "conform-reach"


def _key(variant: Variant, concrete: Concrete, faults: bool) -> str:
    h = hashlib.sha256()
    h.update(variant.path.read_bytes() if variant.path.is_file() else variant.name.encode())
    # The protocol as run: a variant may be run with its assumptions dropped (advise runs
    # each catalog variant as its switches alone), which reaches more than its file says.
    h.update(repr((variant.switches, sorted(variant.assume))).encode())
    h.update(json.dumps(sorted(concrete.inst.sizes.items())).encode())
    h.update(b"faults" if faults else b"no-faults")
    for src in sorted([*_MODEL.rglob("*.py"), _HERE / "coverage.py", _HERE / "steer.py"]):
        h.update(src.read_bytes())
    return h.hexdigest()[:24]


def reachable_cached(
    variant: Variant, concrete: Concrete, allowed: Callable[[str], bool], faults: bool
) -> Reach:
    path = _folder() / f"{variant.name}-{_key(variant, concrete, faults)}.json"
    try:
        raw = json.loads(path.read_text())
        return Reach(
            frozenset((a, tuple(p)) for a, p in raw["transitions"]),
            frozenset((tuple(a), tuple(b)) for a, b in raw["edges"]),
            int(raw["states"]),
            tuple(((a, tuple(p)), frozenset(map(tuple, at))) for a, p, at in raw["goals"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    reach = reachable(concrete, allowed)
    raw = {
        "transitions": sorted([a, list(p)] for a, p in reach.transitions),
        "edges": sorted([list(a), list(b)] for a, b in reach.edges),
        "states": reach.states,
        "goals": [[a, list(p), sorted(map(list, at))] for (a, p), at in reach.goals],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(raw))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache: the answer is still right, only not remembered
    return reach
