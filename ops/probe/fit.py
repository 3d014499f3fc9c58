"""Time to first token against prompt length: a least-squares line and its fast outliers.

A prefill costs time proportional to the prompt; an answer that comes back much faster
than the line predicts was not prefilled at full length (the incident's only visible
symptom: SGLang #30233 prefilled a 1-token placeholder and answered 200). The line is fitted
on the shorter half of the accepted prompts, which lie below any pool boundary.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from kvproof.ops.probe.findings import Fit, Sample

MIN_POINTS = 3
ABS_MARGIN_S = 0.003  # below this, timing differences are noise on any machine


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> Fit:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    a = my - slope * mx
    resid = [y - (a + slope * x) for x, y in zip(xs, ys, strict=True)]
    spread = statistics.pstdev(resid) if n > 1 else 0.0
    return Fit(a, slope, spread, n)


def fit_ttft(samples: Sequence[Sample]) -> Fit | None:
    pts = sorted((s.prompt_tokens, s.ttft_s) for s in samples if s.prompt_tokens)
    lower = pts[: max(MIN_POINTS, len(pts) // 2)]
    if len(lower) < MIN_POINTS or lower[0][0] == lower[-1][0]:
        return None
    return least_squares([float(x) for x, _ in lower], [y for _, y in lower])


def too_fast(fit: Fit, sample: Sample) -> float | None:
    """The predicted prefill time when ``sample`` came back in under half of it, else None."""
    if sample.prompt_tokens is None or fit.slope_s_per_token <= 0:
        return None
    prefill = fit.slope_s_per_token * sample.prompt_tokens
    predicted = fit.intercept_s + prefill
    margin = max(3 * fit.resid_s, ABS_MARGIN_S)
    if sample.ttft_s < fit.intercept_s + prefill / 2 and predicted - sample.ttft_s > margin:
        return predicted
    return None
