"""Transition-system DSL, the PD handoff protocol, and its engines (BMC, proofs, exploration)."""
