"""The context an action body runs in: reads of the pre-state, guards, updates, logic.

The logic (``and_``, ``ite``, ``forall``, ...) is delegated to a ``Logic`` backend; the
state is delegated to a ``StateView``. Reads always see the pre-state (TLA+ style: every
update of one action happens at once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from typing import Protocol as TypingProtocol


class Logic(TypingProtocol):
    def and_(self, *xs: Any) -> Any: ...
    def or_(self, *xs: Any) -> Any: ...
    def not_(self, x: Any) -> Any: ...
    def implies(self, a: Any, b: Any) -> Any: ...
    def ite(self, c: Any, a: Any, b: Any) -> Any: ...
    def eq(self, a: Any, b: Any) -> Any: ...
    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any: ...
    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any: ...


class StateView(TypingProtocol):
    def read(self, var: str, args: tuple[Any, ...]) -> Any: ...


# A value an interpreter computes with: a Python int/bool/str (concrete, compiled), a Z3
# expression (proofs) or a symbolic node; rules and guards are written once for all.
Term = Any
Update = Callable[..., Any]  # fn(*args, old) -> new
Op = tuple[str, Any, Any]  # ("point", args, value) or ("fn", fn, None)


def apply_ops(logic: Logic, ops: Sequence[Op], args: tuple[Any, ...], old: Any) -> Any:
    """The value of ``var(args)`` after an action's ``ops`` on ``var``, from its pre-state
    value ``old``: the DSL's update semantics, written once for every interpreter.

    Ops apply in order, each seeing the previous one's result. A point update
    ``var(a) := b`` is ``ite(args == a, b, old)``, built from the interpreter's own ``eq``,
    ``and_`` and ``ite``: on plain ints they fold to Python values (concrete, compiled and
    bounded interpreters), on Z3 constants they build the term (unbounded proofs); every
    logic returns ``old`` itself for a cell the update does not touch, which the compiler
    and the unroller rely on (``is``) to see that a cell did not change.
    """
    for kind, a, b in ops:
        if kind == "point":
            same = logic.and_(*(logic.eq(x, y) for x, y in zip(args, a, strict=True)))
            old = logic.ite(same, b, old)
        else:
            old = a(*args, old)
    return old


def apply_row(
    logic: Logic, ops: Sequence[Op], cells: Sequence[tuple[Any, ...]], row: Sequence[Any]
) -> list[Any]:
    """``apply_ops`` for every cell of a finite variable (``cells[j]`` are the arguments of
    ``row[j]``): the new row."""
    return [apply_ops(logic, ops, args, old) for args, old in zip(cells, row, strict=True)]


class Ctx:
    """What ``s`` is inside action bodies and invariants."""

    def __init__(self, logic: Logic, state: StateView) -> None:
        self.logic = logic
        self.state = state
        self.guards: list[Any] = []
        # var -> ordered ops: ("point", args, value) or ("fn", fn, None). Each op sees the
        # previous ops' result as ``old``; every other read sees the pre-state.
        # ``apply_ops`` below is their one meaning.
        self.ops: dict[str, list[Op]] = {}

    # -- state ---------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        state = self.__dict__["state"]

        def read(*args: Any) -> Any:
            return state.read(name, args)

        return read

    def require(self, cond: Any) -> None:
        self.guards.append(cond)

    def set(self, var: str, args: Sequence[Any], value: Any) -> None:
        """Point update: ``var(args) := value``."""
        self.ops.setdefault(var, []).append(("point", tuple(args), value))

    def update(self, var: str, fn: Update) -> None:
        """Pointwise update: ``var(xs) := fn(*xs, old)`` for every argument tuple."""
        self.ops.setdefault(var, []).append(("fn", fn, None))

    # -- logic ---------------------------------------------------------------------------
    def and_(self, *xs: Any) -> Any:
        return self.logic.and_(*xs)

    def or_(self, *xs: Any) -> Any:
        return self.logic.or_(*xs)

    def not_(self, x: Any) -> Any:
        return self.logic.not_(x)

    def implies(self, a: Any, b: Any) -> Any:
        return self.logic.implies(a, b)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return self.logic.ite(c, a, b)

    def eq(self, a: Any, b: Any) -> Any:
        return self.logic.eq(a, b)

    def ne(self, a: Any, b: Any) -> Any:
        return self.logic.not_(self.logic.eq(a, b))

    def isin(self, a: Any, *values: Any) -> Any:
        return self.logic.or_(*(self.logic.eq(a, v) for v in values))

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.logic.forall(sort, fn)

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.logic.exists(sort, fn)
