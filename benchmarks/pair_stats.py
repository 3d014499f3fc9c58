"""Statistics of ``benchmarks/engine.py``'s lockstep pairs: the spread of the per-pair
overheads, the median's confidence interval, and the verdict against the goal."""

from __future__ import annotations

import math
import statistics

GOAL_PCT = 1.0


def median_ci(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median: with ``B ~ Bin(n, 1/2)`` the
    order statistics ``k+1`` and ``n-k`` (1-based) hold it with probability
    ``1 - 2 P(B <= k)``; ``k`` is the largest that keeps ``level`` (too few values: the
    whole range, which then covers less). No assumption on the pairs' noise (heavy tails:
    single A/A pairs reach +-15%)."""
    xs = sorted(values)
    n, k, below = len(xs), 0, 0.0
    while k < (n - 1) // 2:
        below += math.comb(n, k) / 2**n  # P(B <= k)
        if below > (1 - level) / 2:
            break
        k += 1
    k = max(k - 1, 0)
    return xs[k], xs[n - 1 - k]


def verdict(ci: tuple[float, float]) -> str:
    """Yes / no when the median's 95% confidence interval lies on one side of the goal.
    The goal is on the median; the pairs' own quartiles hold the method's noise (an A/A
    control's pairs spread as wide), which more pairs narrow in the median, not in them."""
    if ci[1] <= GOAL_PCT:
        return "yes"
    if ci[0] > GOAL_PCT:
        return "no"
    return "inconclusive (the median's 95% interval spans the goal: run more --trials)"


def spread(values: list[float], digits: int = 2) -> dict[str, float]:
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "q1": round(q[0], digits),
        "q3": round(q[2], digits),
        "max": round(max(values), digits),
    }
