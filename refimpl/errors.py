"""The engine's typed errors: a refused event, and the allocator's debug-mode checks."""

from __future__ import annotations


class EngineRefused(Exception):
    """``Cluster.apply`` was asked for an event that is not enabled in the current state."""


class AllocatorError(RuntimeError):
    """An allocator invariant broke; raised only in debug mode (what a real engine lacks)."""


class DoubleFree(AllocatorError):
    """A page was freed while it was already free."""


class DuplicateAllocation(AllocatorError):
    """A page was handed out while another request still owns it."""
