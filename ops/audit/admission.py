"""Which prompt lengths a node admits, written once for Python ints and for Z3 terms.

Two views of the same question:

- ``pool``: the node can hold the prompt's KV: ``L <= pool_tokens`` and ``L <= context_len``.
  This is the operator's view and the incident report's numbers (pool 681,280 vs context
  1,048,576).
- ``engine``: the exact check the engine runs before admission.
  SGLang (``scheduler.py``): ``max_req_len = min(context_len - 1, max_total_num_tokens - 1)``,
  ``max_req_input_len = max_req_len - 5``; a prompt is admitted iff
  ``L <= max_req_input_len`` (the value ``/server_info`` reports wins when present).
  vLLM: ``L <= max_model_len`` (vLLM refuses to start when the pool cannot hold it).

``Ops`` carries the connectives, so ``admits`` is one definition read two ways: with
``PY`` it decides a concrete length, with ``z3_ops()`` it builds the solver's constraint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.ops.audit.deployment import Node

# SGLang reserves one token of the context and five of the request for the output
# (scheduler.py: max_req_len - 5); where operators read the numbers: README "kvproof audit".
SGLANG_LEN_MARGIN = 1
SGLANG_INPUT_MARGIN = 5


@dataclass(frozen=True)
class Ops:
    If: Callable[[Any, Any, Any], Any]
    And: Callable[..., Any]
    Not: Callable[[Any], Any]
    Const: Callable[[int], Any]

    def min(self, a: Any, b: Any) -> Any:
        return self.If(a <= b, a, b)


PY = Ops(
    If=lambda c, a, b: a if c else b,
    And=lambda *xs: all(xs),
    Not=lambda x: not x,
    Const=lambda x: x,
)


def z3_ops() -> Ops:
    import z3

    return Ops(If=z3.If, And=z3.And, Not=z3.Not, Const=z3.IntVal)


def input_limit(node: Node, view: str, ops: Ops = PY) -> Any:
    """The longest prompt ``node`` admits in ``view`` (an int, or a Z3 term)."""
    pool = ops.Const(node.pool_tokens)
    ctx = ops.Const(node.context_len) if node.context_len is not None else None
    if view == "pool":
        return pool if ctx is None else ops.min(pool, ctx)
    if view != "engine":
        raise ValueError(f"unknown view {view!r}")
    if node.engine == "sglang":
        if node.max_req_input_len is not None:
            return ops.Const(node.max_req_input_len)
        cap = pool - SGLANG_LEN_MARGIN
        max_req_len = cap if ctx is None else ops.min(ctx - SGLANG_LEN_MARGIN, cap)
        return max_req_len - SGLANG_INPUT_MARGIN
    return pool if ctx is None else ctx


def admits(node: Node, length: Any, view: str, ops: Ops = PY) -> Any:
    return length <= input_limit(node, view, ops)


def dangerous(
    prefill: Node, decode: Node, advertised: int, length: Any, view: str, ops: Ops = PY
) -> Any:
    """The API accepts ``length``, prefill rejects it, decode admits it (SGLang #30233)."""
    return ops.And(
        length >= 1,
        length <= ops.Const(advertised),
        ops.Not(admits(prefill, length, view, ops)),
        admits(decode, length, view, ops),
    )
