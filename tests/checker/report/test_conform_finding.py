"""The head line ``report --html`` puts on a ``kvproof conform`` divergence trace
(``checker/report/conform_finding.py``), and nothing on any other trace."""

from __future__ import annotations

from kvproof.checker.report.conform_finding import conform_finding

META = {
    "finding": "divergence",
    "source": "conform against vllm 0.34.0",
    "diagnosis": "0.34.0's code frees r0's source blocks <early>",
    "detail": "r0 source: model [0], code []",
    "stalls_after_step": [5],
    "beats_after_step": [3, 2, 3],
}


def test_a_divergence_is_headed_with_where_and_why() -> None:
    line = conform_finding(META, 5)
    assert "DIVERGES after step 5" in line
    assert "deadline after step 5" in line
    assert "heartbeats delivered after steps 2, 3" in line
    assert "&lt;early&gt;" in line and "<early>" not in line  # escaped
    assert "r0 source: model [0], code []" in line


def test_other_traces_get_nothing() -> None:
    assert conform_finding({"source": "check"}, 3) == ""
    assert conform_finding({**META, "finding": "fuzz"}, 3) == ""
