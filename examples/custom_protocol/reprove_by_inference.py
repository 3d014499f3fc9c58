"""Reprove the user protocol of ``my_handoff.py`` with its hand-written strengthening removed.

``my_handoff.py`` reuses kvproof's handoff, and with it the hand-written strengthening of
``model/handoff/strengthening.py``. Here that list is dropped and kvproof infers one from the
protocol's own vocabulary (``model/search/infer.py``); the proof is then the same prover's. The
buggy sibling ``early-free-unposted`` is not proved: a safety invariant is dropped.

Run it from the repository root::

    python examples/custom_protocol/reprove_by_inference.py
    # the same from the shell (--infer ignores the protocol's strengthening):
    kvproof prove deferred-ack --protocol examples/custom_protocol/my_handoff.py:Handoff --infer
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from kvproof.checker.verify.protocols import load_protocol, protocol_for, resolve_variants
from kvproof.model.search.infer import infer

SPEC = f"{Path(__file__).resolve().parent / 'my_handoff.py'}:Handoff"


def main() -> int:
    user = load_protocol(SPEC)
    ok = True
    for name, expect in (("deferred-ack", True), ("early-free-unposted", False)):
        (variant,) = resolve_variants([name], False, None, user)
        protocol = protocol_for(variant, user.factory)
        protocol = dataclasses.replace(protocol, strengthening=())  # the hand-written list, gone
        result = infer(protocol)
        print(f"{name}: {result.summary}")
        for clause in result.inferred if result.proved else ():
            print(f"    {clause.text}")
        ok = ok and result.proved == expect
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
