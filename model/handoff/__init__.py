"""The prefill -> RDMA -> decode handoff written in the DSL: protocol, radix, assumptions.

``build_handoff`` is the documented entry point (README, ``examples/custom_protocol/``,
notebooks 02 and 03); it stays importable from here.
"""

from kvproof.model.handoff.protocol import build_handoff

__all__ = ["build_handoff"]
