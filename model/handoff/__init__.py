"""The prefill -> RDMA -> decode handoff in the DSL: vocabulary, rules, radix, assumptions.

``build_handoff`` is the documented entry point (README, ``examples/custom_protocol/``,
notebooks 02 and 03); it stays importable from here. ``protocol_of(variant)`` is the
variant's protocol, under its assumptions or (``assumed=False``) as written.
"""

from kvproof.model.handoff.of_variant import protocol_of
from kvproof.model.handoff.protocol import build_handoff

__all__ = ["build_handoff", "protocol_of"]
