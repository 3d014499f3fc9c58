"""Traces as JSON Lines: a versioned header line, then one line per step.

    {"kvproof_trace": 1, "kvproof_version": "0.1.0", "variant": "sglang-0.5.19-pd",
     "sizes": {"Req": 2, "Page": 2}, "seed": null,
     "init": {"over_p": {"0": true, "1": false}, "over_d": {...}}, "violated": "isolation"}
    {"step": 1, "action": "arrive", "args": {"r": 0}}
    {"step": 2, "action": "alloc", "args": {"r": 0, "p": 0}, "state": {...}}

Arguments are named by their parameter's sort (its initial: ``r`` for the handoff's Req,
``p`` for Page), in parameter order, which reading keeps; cell keys of ``init`` and
``state`` are the argument tuple joined by commas. ``state`` is optional
and informative (kvproof re-derives every state by replaying the model). Parsing is
strict: every error is a ``KvproofInputError`` naming ``path:line``.

A lasso (a liveness counterexample, issue #29) adds ``"loop": i`` to the header: steps
``i+1..n`` repeat forever, back to the state after step ``i``; each of them is marked
``"in_loop": true``. Safety traces have neither, so files written before lassos load as
before; a loop out of range, or one that does not close, is bad input.

A lasso's ``steps[loop:]`` must return to the state reached after ``steps[:loop]`` (issue
#29 items 3 and 6): a file whose loop does not close describes no infinite run, so it is
rejected like any other malformed input, in either format (``check_loop_index``,
``check_loop_closes``; ``itf.py`` reads the same). An empty loop (``loop`` equal to the
number of steps) is the liveness search's stutter: the run stays in its last state forever,
no fair step being enabled there (``model/search/lasso.py``), which closes by itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvproof import __version__
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import Trace, replay
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.files import read_text, write_text_atomic

FORMAT_VERSION = 1
# ``steps``: the number of step lines. A file cut at a line boundary is still valid JSON
# Lines; without the count it would replay as a shorter, passing trace.
REQUIRED_HEADER = ("kvproof_trace", "variant", "sizes", "init", "steps")
# ``loop`` only for a lasso: safety traces (and every file written before it) omit it.
OPTIONAL_HEADER = ("kvproof_version", "seed", "violated", "loop", "meta")
STEP_KEYS = {"step", "action", "args", "state", "in_loop"}


def param_names(params: tuple[str, ...]) -> tuple[str, ...]:
    """Argument names of an action: the sort's initial (``r``, ``p``), numbered on repeats."""
    out: list[str] = []
    for sort in params:
        base = sort[:1].lower()
        name = base
        n = 2
        while name in out:
            name, n = f"{base}{n}", n + 1
        out.append(name)
    return tuple(out)


def _cells_json(cells: dict[tuple[int, ...], Any]) -> dict[str, Any]:
    return {",".join(map(str, a)): v for a, v in cells.items()}


def write_jsonl(
    trace: Trace, path: Path, *, protocol: Any = None, states: Sequence[Any] = ()
) -> None:
    """Write ``trace``; with ``protocol`` each step line also carries the model's state
    (``states``: the trace's, when the caller holds them; else replayed here)."""
    state_rows = []
    if protocol is not None:
        concrete = Concrete(Instance(protocol, trace.sizes))
        for st in states or replay(trace, concrete):
            state_rows.append({v: _cells_json(c) for v, c in concrete.as_dict(st).items()})
    header: dict[str, Any] = {
        "kvproof_trace": FORMAT_VERSION,
        "kvproof_version": __version__,
        "variant": trace.variant,
        "sizes": dict(trace.sizes),
        "seed": trace.meta.get("seed"),
        "init": {var: _cells_json(dict(sorted(c.items()))) for var, c in trace.init.items()},
        "violated": trace.violated,
        "steps": len(trace.steps),
    }
    if trace.loop is not None:
        header["loop"] = trace.loop
    meta = {k: v for k, v in trace.meta.items() if k != "seed"}
    if meta:
        header["meta"] = meta
    lines = [json.dumps(header, sort_keys=False)]
    for i, inst in enumerate(trace.steps, start=1):
        row: dict[str, Any] = {
            "step": i,
            "action": inst.action,
            "args": dict(zip(_arg_names(protocol, inst), inst.args, strict=True)),
        }
        if trace.loop is not None and i > trace.loop:
            row["in_loop"] = True  # informative: the header's ``loop`` is what counts
        if state_rows:
            row["state"] = state_rows[i]
        lines.append(json.dumps(row))
    write_text_atomic(path, "\n".join(lines) + "\n")


def _arg_names(protocol: Any, inst: ActionInstance) -> tuple[str, ...]:
    """The protocol's names for ``inst``'s arguments; without the protocol (or the action)
    the sorts are unknown: positional names (reading keeps order)."""
    try:
        params = protocol.action(inst.action).params if protocol is not None else ()
    except KeyError:
        params = ()
    return param_names(params) if params else tuple(f"a{i}" for i in range(len(inst.args)))


def _fail(path: Path, line: int, message: str) -> KvproofInputError:
    return KvproofInputError(message, f"{path}:{line}")


def _require(ok: bool, path: Path, line: int, message: str) -> None:
    if not ok:
        raise _fail(path, line, message)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_json_lines(path: Path, what: str = "trace") -> list[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSON Lines file; strict."""
    path = Path(path)
    text = read_text(path, what)
    rows: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise _fail(path, n, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    return rows


def read_jsonl(path: Path) -> Trace:
    """Read a trace written by ``write_jsonl`` (or by hand); strict, with line numbers."""
    path = Path(path)
    rows = read_json_lines(path)
    if not rows:
        raise KvproofInputError("empty trace file", str(path))
    n, header = rows[0]
    ok = isinstance(header, dict) and "kvproof_trace" in header
    _require(ok, path, n, "first line must be the header with 'kvproof_trace'")
    version = header["kvproof_trace"]
    _require(version == FORMAT_VERSION, path, n, f"unsupported trace format {version!r} (want 1)")
    for key in header:
        _require(key in REQUIRED_HEADER + OPTIONAL_HEADER, path, n, f"unknown header key '{key}'")
    for key in REQUIRED_HEADER:
        _require(key in header, path, n, f"missing header key '{key}'")
    variant, sizes, init = header["variant"], header["sizes"], header["init"]
    ok = isinstance(variant, str) and bool(variant)
    _require(ok, path, n, "'variant' must be a non-empty string")
    ok = isinstance(sizes, dict) and all(
        isinstance(k, str) and _is_int(v) and v > 0 for k, v in sizes.items()
    )
    _require(ok, path, n, "'sizes' must map sort names to positive integers")
    _require(isinstance(init, dict), path, n, "'init' must be an object")
    init_cells: dict[str, dict[tuple[int, ...], Any]] = {}
    for var, cells in init.items():
        _require(isinstance(cells, dict), path, n, f"'init.{var}' must map cell keys to values")
        try:
            init_cells[var] = {
                tuple(map(int, k.split(","))) if k else (): v for k, v in cells.items()
            }
        except ValueError:
            raise _fail(path, n, f"'init.{var}': cell keys are comma-separated ints") from None
    violated, seed = header.get("violated"), header.get("seed")
    ok = violated is None or isinstance(violated, str)
    _require(ok, path, n, "'violated' must be a string or null")
    _require(seed is None or _is_int(seed), path, n, "'seed' must be an integer or null")
    _require(isinstance(header.get("meta", {}), dict), path, n, "'meta' must be an object")
    meta = dict(header.get("meta") or {})
    if seed is not None:
        meta["seed"] = seed
    steps: list[ActionInstance] = []
    for expected, (n, row) in enumerate(rows[1:], start=1):
        _require(isinstance(row, dict), path, n, "a step line must be an object")
        for key in row:
            _require(key in STEP_KEYS, path, n, f"unknown step key '{key}'")
        got = row.get("step")
        _require(got == expected, path, n, f"'step' must be {expected}, got {got!r}")
        action, args = row.get("action"), row.get("args", {})
        ok = isinstance(action, str) and bool(action)
        _require(ok, path, n, "'action' must be a non-empty string")
        ok = isinstance(args, dict) and all(_is_int(v) and v >= 0 for v in args.values())
        _require(ok, path, n, "'args' must map parameter names to non-negative integers")
        # In parameter order, as written: JSON objects keep their order, and only the
        # protocol knows its sorts (a generic rank by name broke user protocols).
        steps.append(ActionInstance(action, tuple(args.values())))
    count = header["steps"]
    _require(_is_int(count) and count >= 0, path, n, "'steps' must be a non-negative integer")
    if count != len(steps):
        raise KvproofInputError(
            f"the header says {count} steps, the file has {len(steps)}"
            + (" (truncated?)" if len(steps) < count else ""),
            str(path),
        )
    loop = check_loop_index(header.get("loop"), len(steps), f"{path}:{rows[0][0]}")
    _check_marks(path, rows, loop)
    # Without the protocol only the informative states can show an open loop here (the
    # initial state has no row: a loop from step 0 waits for the model); ``check_against``
    # replays the model and checks it for every lasso.
    if loop is not None and loop > 0:
        first, last = rows[loop][1], rows[-1][1]
        if "state" in first and "state" in last and first["state"] != last["state"]:
            raise _fail(
                path,
                rows[-1][0],
                f"the loop does not close: the state after step {len(steps)} differs from "
                f"the state after step {loop} (line {rows[loop][0]})",
            )
    return Trace(
        variant=variant,
        sizes=dict(sizes),
        init=init_cells,
        steps=tuple(steps),
        violated=violated,
        meta=meta,
        loop=loop,
    )


def _check_marks(path: Path, rows: list[tuple[int, Any]], loop: int | None) -> None:
    """``in_loop`` marks, where a file has them, agree with the header's ``loop``: marks
    without a ``loop`` are a lasso whose loop was dropped (it would read as a safety trace)."""
    for i, (n, row) in enumerate(rows[1:], start=1):
        if "in_loop" not in row:
            continue
        if row["in_loop"] is not True:
            raise _fail(path, n, "'in_loop' must be true (or absent)")
        if loop is None:
            raise _fail(path, n, "step is marked 'in_loop' but the header has no 'loop'")
        if i <= loop:
            raise _fail(path, n, f"step {i} is marked 'in_loop' but the loop starts at {loop + 1}")


def check_loop_index(loop: Any, count: int, where: str, unit: str = "steps") -> int | None:
    """``loop`` as read from a file: None, or an int with ``0 <= loop <= count`` for steps
    (``count``: the stutter), ``0 <= loop < count`` for states.

    ``count`` is the trace's number of ``unit``: kvproof's files count steps, ITF counts
    states (``itf.py`` converts)."""
    if loop is None:
        return None
    if not _is_int(loop):
        raise KvproofInputError(f"'loop' must be an integer, got {loop!r}", where)
    top = count if unit == "steps" else count - 1
    if not 0 <= loop <= top:
        raise KvproofInputError(
            f"'loop' {loop} is out of range: the trace has {count} {unit} (want 0..{top})",
            where,
        )
    return loop


def check_loop_closes(trace: Trace, protocol: Protocol, where: str) -> None:
    """The state after the last step equals the state at ``loop`` (KvproofInputError if not)."""
    if trace.loop is None:
        return
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = replay(trace, concrete)
    if concrete.as_dict(states[-1]) != concrete.as_dict(states[trace.loop]):
        raise KvproofInputError(
            f"the loop does not close: the state after step {len(trace.steps)} differs from "
            f"the state after step {trace.loop} (where the loop starts)",
            where,
        )


def check_against(trace: Trace, protocol: Any, where: str) -> None:
    """Names, arities and sizes of ``trace`` fit ``protocol`` (a KvproofInputError if not)."""
    for sort in protocol.sorts:
        if sort not in trace.sizes:
            raise KvproofInputError(f"'sizes' has no size for sort {sort}", where)
    names = {v.name for v in protocol.vars}
    for var, cells in trace.init.items():
        if var not in names:
            raise KvproofInputError(f"'init' names unknown variable {var!r}", where)
        arity = len(protocol.var(var).args)
        for args in cells:
            if len(args) != arity:
                raise KvproofInputError(f"'init.{var}' cell {args} needs {arity} ints", where)
    for i, inst in enumerate(trace.steps, start=1):
        try:
            action = protocol.action(inst.action)
        except KeyError:
            known = ", ".join(a.name for a in protocol.actions)
            raise KvproofInputError(
                f"step {i}: unknown action {inst.action!r} for this variant (known: {known})",
                where,
            ) from None
        if len(inst.args) != len(action.params):
            raise KvproofInputError(
                f"step {i}: {inst.action} takes {len(action.params)} arguments", where
            )
        for sort, a in zip(action.params, inst.args, strict=True):
            if a >= trace.sizes[sort]:
                raise KvproofInputError(
                    f"step {i}: {inst} has {sort} {a} >= size {trace.sizes[sort]}", where
                )
    check_loop_closes(trace, protocol, where)
