"""kvproof: provable and testable KV-cache isolation for disaggregated LLM serving."""

from importlib.metadata import PackageNotFoundError, version

# One version string: pyproject.toml's, as installed (`pip install -e .` after a bump).
try:
    __version__ = version("kvproof")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
