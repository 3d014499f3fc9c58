"""The handoff protocol in prose, its numbered invariants, and the named variants."""
