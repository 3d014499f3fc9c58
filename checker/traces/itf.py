"""ITF (Informal Trace Format, Apalache/Quint) import and export.

Export writes every state of the trace (the model re-derives them), with the action that led
to it as ``mbt::actionTaken`` and its arguments as ``mbt::nondetPicks``, so the trace opens in
the Quint/Apalache viewers. A relation over sorts becomes a ``#map`` from the argument
(an int as ``#bigint``, a tuple as ``#tup``) to its value; booleans and enum names are plain.

Import reads such files back. When a state has no ``mbt::actionTaken`` (a plain Apalache
counterexample), the action is inferred: the unique model step from the previous state to
this one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvproof import __version__
from kvproof.checker.traces.carried_variant import CARRIED
from kvproof.checker.traces.tracefile import check_loop_closes, check_loop_index, param_names
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace, initial_assignment, replay
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.files import read_text, write_text_atomic

ACTION_KEY = "mbt::actionTaken"
PICKS_KEY = "mbt::nondetPicks"
INIT_ACTION = "init"


def _int(i: int) -> dict[str, str]:
    return {"#bigint": str(i)}


def _key(args: tuple[int, ...]) -> Any:
    return _int(args[0]) if len(args) == 1 else {"#tup": [_int(a) for a in args]}


def _encode(cells: dict[tuple[int, ...], Any]) -> Any:
    """A variable's cells: a nullary one's value, else a ``#map`` from its arguments."""
    return cells[()] if () in cells else {"#map": [[_key(a), v] for a, v in cells.items()]}


def write_itf(trace: Trace, path: Path, protocol: Any, states: Sequence[State] = ()) -> None:
    """Write ``trace`` as ITF JSON (every state, with ``mbt::`` action annotations);
    ``states``: the trace's, when the caller holds them (else replayed here)."""
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = states or replay(trace, concrete)
    rows = []
    for i, st in enumerate(states):
        cells = concrete.as_dict(st)
        row: dict[str, Any] = {"#meta": {"index": i}, **{v: _encode(c) for v, c in cells.items()}}
        if i == 0:
            row[ACTION_KEY], row[PICKS_KEY] = INIT_ACTION, {}
        else:
            inst = trace.steps[i - 1]
            names = param_names(protocol.action(inst.action).params)
            row[ACTION_KEY] = inst.action
            row[PICKS_KEY] = {n: _int(a) for n, a in zip(names, inst.args, strict=True)}
        rows.append(row)
    doc: dict[str, Any] = {
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": f"kvproof {__version__}",
            "variant": trace.variant,
            "sizes": dict(trace.sizes),
            "violated": trace.violated,
            "description": f"{trace.variant}: {trace.violated or 'trace'} ({len(trace)} steps)",
            **{k: trace.meta[k] for k in CARRIED if k in trace.meta},
        },
        "vars": [v.name for v in protocol.vars],
        "states": rows,
    }
    if trace.loop is not None:
        doc["loop"] = itf_loop(trace.loop, len(trace.steps))
    write_text_atomic(path, json.dumps(doc, indent=1) + "\n")


def itf_loop(loop: int, steps: int) -> int:
    """ITF's ``loop`` for kvproof's: ADR-015's is "the index of the state that starts the
    loop"; "the loop ends in the last state", which is followed by ``states[loop]`` again.
    kvproof writes a row per step, so its last state *equals* ``states[loop]`` (the state
    after ``steps[:loop]``) and is followed by ``states[loop + 1]``: ITF's loop is the first
    state a loop step reaches, and ``states[loop + 1:]`` are exactly the loop's steps' rows.
    Writing ``loop`` itself would put a stutter (the last state, then itself) in every round.

    An empty loop (``loop == steps``, the search's stutter) is the last state followed by
    itself: ITF's ``loop`` is that state's index, ``steps``."""
    if loop == steps:
        return loop
    return loop + 1


# -- import --------------------------------------------------------------------------------


def _value(x: Any, where: str) -> Any:
    """Decode an ITF value into ints, bools, strings and tuples."""
    if isinstance(x, bool | str | int):
        return x
    if isinstance(x, dict):
        if "#bigint" in x:
            try:
                return int(x["#bigint"])
            except (TypeError, ValueError):
                raise KvproofInputError(f"bad #bigint {x['#bigint']!r}", where) from None
        if "#tup" in x:
            return tuple(_value(e, where) for e in x["#tup"])
        if "tag" in x:  # Quint's option / sum types: Some(v) -> v, None -> None
            return None if x["tag"] == "None" else _value(x.get("value"), where)
    raise KvproofInputError(f"unsupported ITF value {json.dumps(x)[:60]}", where)


def _cells(x: Any, where: str) -> dict[tuple[int, ...], Any]:
    if not (isinstance(x, dict) and ("#map" in x or "#set" in x)):
        return {(): _value(x, where)}
    # A relation given as the set of its true tuples maps each of them to true.
    pairs = x["#map"] if "#map" in x else [[e, True] for e in x["#set"]]
    out = {}
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise KvproofInputError("#map entries must be [key, value] pairs", where)
        k = _value(pair[0], where)
        out[k if isinstance(k, tuple) else (k,)] = _value(pair[1], where)
    return out


def read_doc(path: Path) -> dict[str, Any]:
    """An ITF file's JSON object; malformed files are bad input."""
    try:
        doc = json.loads(read_text(path, "trace"))
    except json.JSONDecodeError as exc:
        raise KvproofInputError(f"malformed JSON: {exc.msg}", f"{path}:{exc.lineno}") from None
    if not isinstance(doc, dict):
        raise KvproofInputError("not an ITF trace (expected a JSON object)", str(path))
    return doc


def read_itf(path: Path, protocol: Any) -> Trace:
    """Read an ITF trace of ``protocol``; strict, errors name ``path: states[i].key``."""
    path = Path(path)
    doc = read_doc(path)
    if not isinstance(doc.get("states"), list) or not doc["states"]:
        raise KvproofInputError("not an ITF trace (no 'states' list)", str(path))
    meta = doc.get("#meta") or {}
    names = {v.name for v in protocol.vars}
    decoded: list[dict[str, dict[tuple[int, ...], Any]]] = []
    for i, row in enumerate(doc["states"]):
        where = f"{path}: states[{i}]"
        if not isinstance(row, dict):
            raise KvproofInputError("a state must be an object", where)
        st = {}
        for key, val in row.items():
            if key.startswith("#") or key.startswith("mbt::"):
                continue
            if key not in names:
                raise KvproofInputError(f"unknown variable {key!r}", where)
            st[key] = _cells(val, f"{where}.{key}")
        decoded.append(st)
    sizes = meta.get("sizes") or _infer_sizes(protocol, decoded)
    for sort in protocol.sorts:
        if not isinstance(sizes.get(sort), int):
            raise KvproofInputError(f"no size for sort {sort}", f"{path}: #meta.sizes")
    concrete = Concrete(Instance(protocol, sizes))
    states = [concrete.make_state(decoded[0])]
    steps: list[ActionInstance] = []
    for i, row in enumerate(doc["states"][1:], start=1):
        where = f"{path}: states[{i}]"
        if ACTION_KEY in row:
            inst = _picked(protocol, row, where)
            nxt = concrete.step(states[-1], inst)
            if nxt is None:
                raise KvproofInputError(f"{inst} is not enabled in the previous state", where)
        else:
            inst, nxt = _infer(concrete, states[-1], decoded[i], where)
        steps.append(inst)
        states.append(nxt)
    loop = _loop(concrete, states, decoded, steps, doc.get("loop"), path)
    trace = Trace(
        variant=str(meta.get("variant") or ""),
        sizes=dict(sizes),
        init=initial_assignment(concrete, states[0]),
        steps=tuple(steps),
        violated=meta.get("violated"),
        meta={"source": str(meta.get("source", "itf"))}
        | {k: meta[k] for k in CARRIED if k in meta},
        loop=loop,
    )
    check_loop_closes(trace, protocol, f"{path}: loop")
    try:
        replay(trace, concrete)
    except ReplayError as exc:  # pragma: no cover - steps were checked one by one above
        raise KvproofInputError(str(exc), str(path)) from None
    return trace


def _loop(
    concrete: Concrete,
    states: list[State],
    decoded: list[dict[str, dict[tuple[int, ...], Any]]],
    steps: list[ActionInstance],
    raw: Any,
    path: Path,
) -> int | None:
    """kvproof's loop for ITF's ``raw`` (see ``itf_loop``); a missing closing step is added.

    The last state is followed by ``states[raw]``. In kvproof's files the last state equals
    ``states[raw - 1]``, so that successor is step ``raw`` already in the file: the loop is
    ``steps[raw - 1:]``. Another tool's lasso need not repeat a state: the step from the last
    state back to ``states[raw]`` is then inferred and appended, and the loop is
    ``steps[raw:]``. Neither: the loop does not close, which is bad input."""
    where = f"{path}: loop"
    raw = check_loop_index(raw, len(states), where, unit="states")
    if raw is None:
        return None
    last = concrete.as_dict(states[-1])
    if raw >= 1 and last == concrete.as_dict(states[raw - 1]):
        return raw - 1
    if raw == len(states) - 1:  # the last state followed by itself: a stutter
        return len(steps)
    try:
        inst, _ = _infer(concrete, states[-1], decoded[raw], where)
    except KvproofInputError:
        raise KvproofInputError(
            f"the loop does not close: no step of the model leads from the last state "
            f"(states[{len(states) - 1}]) back to states[{raw}], where 'loop' {raw} starts it",
            where,
        ) from None
    steps.append(inst)
    return raw


def _picked(protocol: Any, row: dict[str, Any], where: str) -> ActionInstance:
    name = row[ACTION_KEY]
    try:
        action = protocol.action(name)
    except KeyError:
        raise KvproofInputError(f"unknown action {name!r}", f"{where}.{ACTION_KEY}") from None
    picks = row.get(PICKS_KEY) or {}
    args = []
    for pname in param_names(action.params):
        if pname not in picks:
            raise KvproofInputError(f"no pick for {pname!r} of {name}", f"{where}.{PICKS_KEY}")
        args.append(_value(picks[pname], where))
    return ActionInstance(name, tuple(args))


def _infer(
    concrete: Concrete, state: State, want: dict[str, dict[tuple[int, ...], Any]], where: str
) -> tuple[ActionInstance, State]:
    target = concrete.as_dict(concrete.make_state(want))
    matches = []
    for inst, nxt in concrete.successors(state):
        values = concrete.as_dict(nxt)
        if all(values[v] == target[v] for v in want):
            matches.append((inst, nxt))
    if not matches:
        raise KvproofInputError("no action of the model leads to this state", where)
    return matches[0]


def _infer_sizes(protocol: Any, states: list[dict[str, dict[tuple[int, ...], Any]]]) -> dict:
    sizes = {s: 0 for s in protocol.sorts}
    for var, cells in states[0].items():
        for args in cells:
            for sort, a in zip(protocol.var(var).args, args, strict=False):
                if isinstance(a, int):
                    sizes[sort] = max(sizes[sort], a + 1)
    return sizes
