"""What ``check`` runs for one variant, decided in one place: ``plan(...) -> tuple[Phase, ...]``.

The phases, in the order ``driver.py`` runs them:

1. **BMC** to the variant's depth (a buggy variant's deep search with the proof of the
   invariants it has not broken running beside it, ``driver.py``'s ``BackgroundSubset``);
   for a fixed, strengthened variant (the portfolio, issue #30) a **shallow BMC** first for
   a quick, shortest counterexample, then the **proof**, which settles the verdict for every
   depth and size when it goes through (an inductive invariant has no counterexample of any
   length), and the **deep BMC** only when it did not, so every counterexample is still the
   shortest at its depth. ``--depth``, ``--no-prove`` and buggy variants keep the full-depth
   BMC (a buggy variant's traces are documented and pinned);
2. **necessity**: each guard assumption of a fixed variant dropped once, to the full depth;
3. the **complete search** (``model/search/complete.py``) when asked for (``--complete``,
   ``complete = true``) or as the fallback when BMC found nothing and the proof failed, within
   ``FALLBACK_BUDGET_S``; an "unknown" then names the command that would decide it;
4. **liveness**: fair lassos at 2 requests and 1 page (``--liveness``, a property named by
   ``--invariant``, or ``--all``'s ``[expect]`` liveness keys).

The plan is plain data: it decides from the variant and the options alone (and whether the
protocol has a strengthening to prove); the driver adds only what the results decide (a
proof that goes through skips the deep BMC; the fallback runs only on "unknown").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Variant

Prove = Literal["auto", "always", "never"]
PhaseName = Literal["bmc", "proof", "necessity", "complete", "liveness"]
Reason = Literal["requested", "variant", "fallback"]

# Depth 8 costs about 1.4 s for sglang-0.5.22-pd at 3x6 (depth 15: about 70 s on a loaded
# 2-core box, 95 % of it in depths 14 and 15); every catalog counterexample a fixed variant's
# assumptions hide is found by the necessity check, which runs to the full depth.
SHALLOW_DEPTH = 8
# A buggy variant's BMC waits for the proof of the invariants it has not broken at one fixed
# depth, whatever the proof's speed, so that its answer (and the inductive invariant asserted
# from then on, which may change Z3's pick among equally short traces) enters every run at
# the same point: ``SUBSET_LEAD`` depths before the last, in a search at least
# ``SUBSET_MIN_DEPTH`` deep. Those last depths cost the most (sglang-pd-decode-radix-race:
# depths 15-17 took 3 of its 3.2 minutes alone without the invariant, 15 s in all with it),
# while a shallower search is over before the proof (Houdini, 1-3 s) would be (measured per
# variant, ``kvproof check V``: the proof cost sglang-0.5.19-pd 1.1 -> 3.3 s at depth 12).
SUBSET_MIN_DEPTH = 15
SUBSET_LEAD = 4
FALLBACK_BUDGET_S = 30.0  # the fallback complete search's own budget without --budget


@dataclass(frozen=True)
class CheckOptions:
    """What ``kvproof check`` takes besides the variants (its flags, by the same names)."""

    requests: int = 3
    pages: int = 6
    depth: int | None = None  # None: each variant's bmc_depth
    # None: every invariant; may name liveness properties (then only those are checked)
    invariants: tuple[str, ...] | None = None
    prove: Prove = "auto"  # "auto": fixed variants with a strengthening
    without: tuple[str, ...] = ()  # assumptions dropped
    necessity: bool = True  # test whether each assumption in force is needed
    complete: bool = False  # also run the complete search at requests/pages
    budget: float | None = None  # seconds for the complete search (None: its default)
    liveness: bool = False  # only the liveness properties (--liveness)
    protocol: str | None = None  # a user protocol's 'module:attr'
    workers: int | None = None  # processes (None: one per core, at most one per variant)
    ray: str | None = None  # a Ray address (checker/distrib/executor.py), or None
    out: Path | None = None  # traces (.jsonl, .itf.json) of each counterexample
    html: Path | None = None  # an HTML report per violated invariant
    junit: Path | None = None
    sarif: Path | None = None

    @property
    def sizes(self) -> dict[str, int]:
        return {"Req": self.requests, "Page": self.pages}


@dataclass(frozen=True)
class Phase:
    name: PhaseName
    depth: int | None = None  # bmc and necessity: how deep
    background: bool = False  # bmc: prove the unbroken invariants beside it
    settles: bool = False  # proof: after a clean BMC, a proof ends the search (no deep BMC)
    reason: Reason | None = None  # complete: why it runs ("fallback": only on unknown)
    budget: float | None = None  # complete: seconds
    names: tuple[str, ...] | None = None  # liveness: the properties (None: every one)
    necessity: bool = False  # liveness: drop each fairness assumption in force once


def split_names(names: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """``--invariant`` names: (safety invariants, liveness properties)."""
    from kvproof.spec.liveness import LIVENESS

    names = list(names or [])
    return [n for n in names if n not in LIVENESS], [n for n in names if n in LIVENESS]


def check_mixed(options: CheckOptions) -> None:
    """Safety and liveness names in one run are bad input (one line, exit 2)."""
    safety, live = split_names(options.invariants)
    if live and safety:
        raise KvproofInputError(
            f"--invariant names safety invariants ({', '.join(safety)}) and liveness"
            f" properties ({', '.join(live)}): check them in two runs",
            "--invariant",
        )
    if options.liveness and safety:
        raise KvproofInputError(
            f"--liveness checks liveness properties only, not {', '.join(safety)}",
            "--invariant",
        )


def plan(
    variant: Variant, options: CheckOptions, *, strengthened: bool, every: bool = False
) -> tuple[Phase, ...]:
    """The phases of ``variant``'s check; ``strengthened``: its protocol has a strengthening
    to prove; ``every``: ``check --all`` (the variant's ``[expect]`` liveness keys too)."""
    lively = split_names(options.invariants)[1]
    if options.liveness or lively:
        return (Phase("liveness", names=tuple(lively) or None, necessity=options.necessity),)
    given = options.depth is not None
    depth = options.depth if options.depth is not None else variant.bmc_depth
    fixed = not variant.buggy and strengthened
    phases: list[Phase] = []
    if fixed and not given and options.prove != "never" and depth > SHALLOW_DEPTH:
        # the portfolio (issue #30): the proof answers for every depth in seconds
        phases += [
            Phase("bmc", SHALLOW_DEPTH),
            Phase("proof", settles=True),
            Phase("bmc", depth),
            Phase("proof"),
        ]
    else:
        background = variant.buggy and options.prove != "never" and not given
        phases.append(Phase("bmc", depth, background=background and depth >= SUBSET_MIN_DEPTH))
        # "holds to depth 12" is not what an engine team needs to hear: prove fixed ones
        if options.prove == "always" or (options.prove == "auto" and fixed):
            phases.append(Phase("proof"))
    # An assumption carries a verdict of safety in fixed variants only (a buggy variant's
    # narrow its environment to the bug's); a user protocol brings its own.
    if options.necessity and options.protocol is None and variant.assume and not variant.buggy:
        phases.append(Phase("necessity", depth))
    reason: Reason = (
        "requested" if options.complete else "variant" if variant.complete else "fallback"
    )
    budget = options.budget or (FALLBACK_BUDGET_S if reason == "fallback" else 120.0)
    phases.append(Phase("complete", reason=reason, budget=budget))
    if every and not options.invariants and variant.expect_liveness:
        phases.append(Phase("liveness"))
    return tuple(phases)
