"""The action compiler behind ``Concrete``'s fast path.

Each action instance's body runs once over symbolic cells (``_SymLogic``); the DSL forbids
Python branches on state, so one symbolic run sees every path, and the result is rendered as
straight-line Python that reads each cell as a local and checks guards before any update.
A body that branches on state raises ``_Untraceable`` and falls back to the reference
interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Protocol as TypingProtocol

from kvproof.model.lang.context import Ctx, apply_row
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.fold import fold, one_or
from kvproof.model.lang.instance import ActionInstance, Instance

Data = tuple[tuple[Any, ...], ...]  # ``State.data``: one value tuple per variable


class Reference(TypingProtocol):
    """What the compiler needs from the reference interpreter (``Concrete`` is one)."""

    inst: Instance
    protocol: Protocol
    cells: dict[str, list[tuple[int, ...]]]

    def interpret(self, data: Data, inst: ActionInstance) -> Data | None: ...
    def ctx_of(self, data: Data) -> Ctx: ...


class _Untraceable(Exception):
    """An action body branched in Python on a state value (not allowed by the DSL)."""


class _Sym:
    """A symbolic value: a cell read or an operation over symbolic values and constants.

    Nodes are hash-consed by the compiler, so equal expressions are the same object.
    """

    __slots__ = ("args", "is_bool", "op")

    def __init__(self, op: str, args: tuple[Any, ...], is_bool: bool) -> None:
        # "cell" (args: local name, var index), "and", "or", "not", "ite", "eq", "bool"
        self.op = op
        self.args = args
        self.is_bool = is_bool

    def __bool__(self) -> bool:
        raise _Untraceable("Python branch on a state value")

    def __eq__(self, other: object) -> bool:
        raise _Untraceable("Python == on a state value (use s.eq)")

    __hash__ = object.__hash__


class _SymLogic:
    """``PyLogic`` over symbolic values, folding Python constants exactly as it would."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        self._nodes: dict[tuple[Any, ...], _Sym] = {}

    def node(self, op: str, args: tuple[Any, ...], is_bool: bool) -> _Sym:
        key = (op, *(("s", id(a)) if isinstance(a, _Sym) else ("k", type(a), a) for a in args))
        try:
            got = self._nodes.get(key)
        except TypeError:  # an unhashable constant: no sharing, same meaning
            return _Sym(op, args, is_bool)
        if got is None:
            got = self._nodes[key] = _Sym(op, args, is_bool)
        return got

    def as_bool(self, x: Any) -> Any:
        if not isinstance(x, _Sym):
            return bool(x)
        return x if x.is_bool else self.node("bool", (x,), True)

    def and_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=False, term=self._term, join=self._join("and"))

    def or_(self, *xs: Any) -> Any:
        return fold(xs, absorbing=True, term=self._term, join=self._join("or"))

    def _term(self, x: Any) -> _Sym | None:
        return self.as_bool(x) if isinstance(x, _Sym) else None

    def _join(self, op: str) -> Callable[[list[Any]], Any]:
        return one_or(lambda *terms: self.node(op, terms, True))

    def not_(self, x: Any) -> Any:
        if not isinstance(x, _Sym):
            return not x
        return self.node("not", (x,), True)

    def implies(self, a: Any, b: Any) -> Any:
        return self.or_(self.not_(a), self.as_bool(b))

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if not isinstance(c, _Sym):
            return a if c else b
        if a is b:
            return a
        if c.is_bool and a is True and b is False:
            return c
        if a is False and b is True:
            return self.not_(c)
        both_bool = _is_bool(a) and _is_bool(b)
        return self.node("ite", (c, a, b), both_bool)

    def eq(self, a: Any, b: Any) -> Any:
        if not isinstance(a, _Sym) and not isinstance(b, _Sym):
            return a == b
        return self.node("eq", (a, b), True)

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.and_(*(fn(i) for i in range(self.sizes[sort])))

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        return self.or_(*(fn(i) for i in range(self.sizes[sort])))


def _is_bool(x: Any) -> bool:
    return x.is_bool if isinstance(x, _Sym) else isinstance(x, bool)


class _CellView:
    """Reads of the symbolic cells of one state (a compiled function's input ``d``)."""

    def __init__(self, compiler: Compiler) -> None:
        self.c = compiler

    def read(self, var: str, args: tuple[Any, ...]) -> Any:
        if not all(type(a) is int for a in args):
            raise _Untraceable(f"symbolic argument in a read of {var}")
        inst = self.c.inst
        return self.c.cells[inst.var_index[var]][inst.flat(var, args)]


_LITERALS = (bool, int, str, type(None))


class Compiler:
    """Generates straight-line Python for action instances and invariants."""

    def __init__(self, reference: Reference) -> None:
        self.reference = reference
        self.inst = reference.inst
        self.protocol = reference.protocol
        self.logic = _SymLogic(reference.inst.sizes)
        self._bodies = {a.name: a.body for a in self.protocol.actions}
        vars_ = self.protocol.vars
        self.rows = [len(reference.cells[v.name]) for v in vars_]
        self.cells = [
            [self.logic.node("cell", (f"c{i}_{j}", i), v.kind == "bool") for j in range(n)]
            for i, (v, n) in enumerate(zip(vars_, self.rows, strict=True))
        ]
        self.consts: list[Any] = []
        self.fallback: list[Callable[[Any], Any]] = []

    # -- symbolic runs -------------------------------------------------------------------
    def _ctx(self) -> Ctx:
        return Ctx(self.logic, _CellView(self))

    def _trace(self, inst: ActionInstance) -> tuple[list[Any], dict[int, list[Any]]] | None:
        """(guards, {var index: new row}) of a symbolic run, or None if not compilable."""
        ctx = self._ctx()
        try:
            self._bodies[inst.action](ctx, *inst.args)
            rows: dict[int, list[Any]] = {}
            for var, ops in ctx.ops.items():
                i = self.inst.var_index[var]
                rows[i] = apply_row(self.logic, ops, self.reference.cells[var], self.cells[i])
        except _Untraceable:
            return None
        return [self.logic.as_bool(g) for g in ctx.guards], rows

    # -- code generation -----------------------------------------------------------------
    def _lit(self, value: Any) -> str:
        if type(value) in _LITERALS:
            return repr(value)
        self.consts.append(value)
        return f"K[{len(self.consts) - 1}]"

    def _render(self, x: Any, names: dict[int, str], used: set[int]) -> str:
        if not isinstance(x, _Sym):
            return self._lit(x)
        name = names.get(id(x))
        if name is not None:
            return name
        if x.op == "cell":
            used.add(x.args[1])
            return str(x.args[0])
        parts = [self._render(a, names, used) for a in x.args]
        if x.op == "and":
            return "(" + " and ".join(parts) + ")"
        if x.op == "or":
            return "(" + " or ".join(parts) + ")"
        if x.op == "not":
            return f"(not {parts[0]})"
        if x.op == "eq":
            return f"({parts[0]} == {parts[1]})"
        if x.op == "ite":
            return f"({parts[1]} if {parts[0]} else {parts[2]})"
        return f"bool({parts[0]})"

    def _shared(self, roots: list[Any]) -> list[_Sym]:
        """Compound nodes referenced more than once from ``roots``, children first."""
        count: dict[int, int] = {}
        order: list[_Sym] = []

        def visit(x: Any) -> None:
            if not isinstance(x, _Sym) or x.op == "cell":
                return
            count[id(x)] = count.get(id(x), 0) + 1
            if count[id(x)] == 1:
                for a in x.args:
                    visit(a)
                order.append(x)

        for r in roots:
            visit(r)
        return [x for x in order if count[id(x)] > 1]

    def _block(
        self, inst: ActionInstance, used: set[int], indent: str
    ) -> tuple[str | None, list[str]]:
        """(guard code, lines computing ``new``) of one instance; guard None: disabled."""
        traced = self._trace(inst)
        if traced is None:
            self.fallback.append(self._fallback(inst))
            k = len(self.fallback) - 1
            return "True", [f"{indent}new = F[{k}](d)", f"{indent}if new is not None:"]
        guards, rows = traced
        if any(g is False for g in guards):
            return None, []
        guard = " and ".join(self._render(g, {}, used) for g in guards if g is not True)
        changed = {
            i: row
            for i, row in rows.items()
            if any(c is not old for c, old in zip(row, self.cells[i], strict=True))
        }
        names: dict[int, str] = {}
        lines = []
        for n, x in enumerate(self._shared([c for row in changed.values() for c in row])):
            code = self._render(x, names, used)
            names[id(x)] = f"t{n}"
            lines.append(f"{indent}t{n} = {code}")
        out = []
        for i in range(len(self.rows)):
            if i in changed:
                cells = ", ".join(self._render(c, names, used) for c in changed[i])
                out.append(f"({cells},)")
            else:
                out.append(f"r{i}")
        lines.append(f"{indent}new = ({', '.join(out)},)")
        return guard or "True", lines

    def _fallback(self, inst: ActionInstance) -> Callable[[Any], Any]:
        interpret = self.reference.interpret
        return lambda data: interpret(data, inst)

    def _unpack(self, used: set[int]) -> list[str]:
        """Every row as a local ``r<i>`` (a new state reuses the rows it leaves alone), and
        every cell read as a local ``c<i>_<j>``."""
        lines = [f"    {', '.join(f'r{i}' for i in range(len(self.rows)))}, = d"]
        for i in sorted(used):
            names = ", ".join(f"c{i}_{j}" for j in range(self.rows[i]))
            lines.append(f"    {names}, = r{i}")
        return lines

    def _define(self, name: str, body: list[str], env: dict[str, Any]) -> Callable[[Any], Any]:
        src = "\n".join([f"def {name}(d):", *body])
        scope = {"K": self.consts, "F": self.fallback, **env}
        exec(compile(src, f"<kvproof:{name}>", "exec"), scope)
        fn: Callable[[Any], Any] = scope[name]  # the function the source just defined
        return fn

    def successors(self, instances: list[ActionInstance]) -> Callable[[Any], Any]:
        used: set[int] = set()
        body: list[str] = []
        live: list[ActionInstance] = []
        for inst in instances:
            guard, lines = self._block(inst, used, "        ")
            if guard is None:
                continue
            body.append(f"    if {guard}:  # {inst}")
            if lines and lines[-1].endswith("if new is not None:"):
                body += lines[:-1]
                body.append("        if new is not None:")
                body.append(f"            out.append((I[{len(live)}], new))")
            else:
                body += lines
                body.append(f"        out.append((I[{len(live)}], new))")
            live.append(inst)
        src = [*self._unpack(used), "    out = []", *body, "    return out"]
        return self._define("successors", src, {"I": live})

    def step(self, inst: ActionInstance) -> Callable[[Any], Any]:
        used: set[int] = set()
        guard, lines = self._block(inst, used, "    ")
        if guard is None:
            return lambda d: None
        if lines and lines[-1].endswith("if new is not None:"):
            return self.fallback[-1]
        body = [*self._unpack(used), f"    if not ({guard}):", "        return None", *lines]
        return self._define("step", [*body, "    return new"], {})

    def _inv_code(self, inv: Invariant, used: set[int]) -> str | None:
        try:
            value = self.logic.as_bool(inv.body(self._ctx()))
        except _Untraceable:
            return None
        return self._render(value, {}, used)

    def invariant(self, inv: Invariant) -> Callable[[Any], bool]:
        used: set[int] = set()
        code = self._inv_code(inv, used)
        if code is None:
            ctx_of = self.reference.ctx_of
            return lambda d: bool(inv.body(ctx_of(d)))
        return self._define("check", [*self._unpack(used), f"    return {code}"], {})

    def violated(self, invs: tuple[Invariant, ...]) -> Callable[[Any], list[str]]:
        used: set[int] = set()
        lines = []
        checks: list[Callable[[Any], bool]] = []
        for inv in invs:
            code = self._inv_code(inv, used)
            if code is None:
                checks.append(self.invariant(inv))
                code = f"C[{len(checks) - 1}](d)"
            lines += [f"    if not {code}:", f"        out.append({inv.name!r})"]
        body = [*self._unpack(used), "    out = []", *lines, "    return out"]
        return self._define("violated", body, {"C": checks})
