"""kvproof: provable and testable KV-cache isolation for disaggregated LLM serving."""

__version__ = "0.1.0"
