"""A black-box isolation probe for any OpenAI-compatible endpoint (``kvproof probe``).

``run_probe`` plants canaries from one tenant, sends prompts from another around the
acceptance boundary, and returns a ``ProbeReport`` of findings: foreign canaries, 200s that
should have been 400s, answers faster than their prefill could take, inconsistent answers.
"""

from kvproof.ops.probe.findings import ProbeFinding, ProbeReport, Sample
from kvproof.ops.probe.probe import Budget, run_probe

__all__ = ["Budget", "ProbeFinding", "ProbeReport", "Sample", "run_probe"]
