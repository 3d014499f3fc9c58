"""How a lasso's loop is marked wherever a trace is printed as lines (issue #29 item 3).

TLC prints a lasso's states and then "Back to state N"; kvproof prints steps, so the mark
before the loop's first step says the steps below repeat, and the one after the last step
names the step the run goes back to (the loop's first, ``loop + 1``). One wording for the
check table, the JUnit/SARIF text and any other printer, so a reader learns it once.
"""

from __future__ import annotations

from collections.abc import Sequence

LOOP_START = "-- loop: the following steps repeat forever --"


def back_to(loop: int) -> str:
    """The closing mark: after the last step the run is back at step ``loop + 1``."""
    return f"-- back to step {loop + 1} --"


def marked_lines(lines: Sequence[str], loop: int | None) -> list[str]:
    """One line per step, with the loop's two marks (unchanged for a safety trace)."""
    if loop is None:
        return list(lines)
    return [*lines[:loop], LOOP_START, *lines[loop:], back_to(loop)]
