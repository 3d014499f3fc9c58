"""The danger window, solved with Z3: prompt lengths the API accepts, prefill rejects and
decode admits.

For each prefill/decode pair and each view (see ``admission``), ``z3.Optimize`` minimises
and then maximises an ``Int`` prompt length under the pair's constraints. The answer is
re-checked twice, as every solver answer in kvproof is: Z3 proves that no length
between the bounds falls outside the window (so the window is one range, not a hull), and
the plain-Python reading of the same constraints confirms both ends and their neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.ops.audit.admission import dangerous, input_limit, z3_ops
from kvproof.ops.audit.deployment import Node


@dataclass(frozen=True)
class Window:
    prefill: str
    decode: str
    view: str  # pool | engine
    lo: int
    hi: int
    prefill_limit: int  # the longest prompt prefill admits in this view
    decode_limit: int

    @property
    def lengths(self) -> int:
        return self.hi - self.lo + 1


def _optimum(prefill: Node, decode: Node, advertised: int, view: str, maximise: bool) -> int | None:
    import z3

    length = z3.Int("prompt_len")
    opt = z3.Optimize()
    opt.add(dangerous(prefill, decode, advertised, length, view, z3_ops()))
    handle = opt.maximize(length) if maximise else opt.minimize(length)
    if opt.check() != z3.sat:
        return None
    return opt.upper(handle).as_long() if maximise else opt.lower(handle).as_long()


def _recheck(prefill: Node, decode: Node, advertised: int, view: str, lo: int, hi: int) -> None:
    import z3

    length = z3.Int("prompt_len")
    gap = z3.Solver()
    gap.add(length >= lo, length <= hi)
    gap.add(z3.Not(dangerous(prefill, decode, advertised, length, view, z3_ops())))
    contiguous = gap.check() == z3.unsat
    ends = all(dangerous(prefill, decode, advertised, n, view) for n in (lo, hi))
    outside = not any(dangerous(prefill, decode, advertised, n, view) for n in (lo - 1, hi + 1))
    if not (contiguous and ends and outside):
        raise AssertionError(
            f"kvproof bug: Z3's window {lo}..{hi} ({prefill.name}->{decode.name}, {view}) "
            "does not re-check"
        )


def solve_pair(prefill: Node, decode: Node, advertised: int, view: str) -> Window | None:
    """The window for one pair in one view, or ``None`` when no length is dangerous."""
    lo = _optimum(prefill, decode, advertised, view, maximise=False)
    if lo is None:
        return None
    hi = _optimum(prefill, decode, advertised, view, maximise=True)
    assert hi is not None  # satisfiable once, satisfiable again
    _recheck(prefill, decode, advertised, view, lo, hi)
    return Window(
        prefill=prefill.name,
        decode=decode.name,
        view=view,
        lo=lo,
        hi=hi,
        prefill_limit=input_limit(prefill, view),
        decode_limit=input_limit(decode, view),
    )
