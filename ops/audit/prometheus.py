"""Prometheus text (``/metrics``) as samples, and what a latency histogram proves.

``name{labels} value [timestamp]``; labels are checked apart, so a cut-off line is caught.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from kvproof.ops.audit.textfile import numbered
from kvproof.spec.errors import KvproofInputError

SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>.*)\})?\s+"
    r"(?P<value>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|Inf|NaN))(?:\s+-?\d+)?$"
)
LABEL = re.compile(r'\s*(\w+)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float
    where: str


def _labels(text: str, where: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = LABEL.match(text, pos)
        if match is None:
            raise KvproofInputError("malformed metric labels (truncated?)", where)
        labels[match.group(1)] = match.group(2)
        pos = match.end()
    return labels


def samples(text: str, path: str) -> Iterator[Sample]:
    for no, line in numbered(text):
        where = f"{path}:{no}"
        if not line.strip() or line.startswith("#"):
            continue
        match = SAMPLE.match(line.strip())
        if match is None:
            raise KvproofInputError("malformed metrics line (truncated?)", where)
        labels = _labels(match.group("labels") or "", where)
        yield Sample(match.group("name"), labels, float(match.group("value")), where)


def slowest_above(found: list[Sample], family: str, scale: float) -> tuple[float, str] | None:
    """The largest bucket bound some observation exceeded, in seconds (x ``scale``).

    A cumulative bucket ``le=B`` counting fewer observations than ``_count`` proves at
    least one took longer than B (summed over label sets, e.g. per engine or rank). None
    when every observation fits the smallest bucket or the family is absent.
    """
    buckets: dict[float, float] = {}
    count = 0.0
    where = ""
    for s in found:
        if s.name == f"{family}_bucket" and "le" in s.labels:
            bound = math.inf if s.labels["le"] == "+Inf" else float(s.labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + s.value
        elif s.name == f"{family}_count":
            count += s.value
            where = s.where
    exceeded = [b for b, n in buckets.items() if math.isfinite(b) and n < count]
    if not exceeded or count <= 0:
        return None
    return max(exceeded) * scale, where
