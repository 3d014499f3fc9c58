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


Update = Callable[..., Any]  # fn(*args, old) -> new


class Ctx:
    """What ``s`` is inside action bodies and invariants."""

    def __init__(self, logic: Logic, state: StateView, switches: Any) -> None:
        self.logic = logic
        self.state = state
        self.sw = switches
        self.guards: list[Any] = []
        # var -> ordered ops: ("point", args, value) or ("fn", fn, None). Each op sees the
        # previous ops' result as ``old``; every other read sees the pre-state.
        self.ops: dict[str, list[tuple[str, Any, Any]]] = {}

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
