"""The environment variables a release reads, with their kinds and defaults.

Read (not run) from the release's own ``sglang/srt/environ.py``: every ``NAME =
EnvBool(...)``/``EnvInt``/``EnvFloat``/``EnvStr`` in ``class Envs`` (the registry the
release's code reads through ``envs.NAME.get()``). A name that is not there is a name the
release never reads: ``advise`` refuses it before any work.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError

# environ.py's EnvBool accepts these spellings (case-insensitive).
_TRUE = ("1", "true", "yes", "y", "on")
_FALSE = ("0", "false", "no", "n", "off")


@dataclass(frozen=True)
class EnvName:
    name: str
    kind: str  # "EnvBool", "EnvInt", "EnvFloat", "EnvStr", ...
    default: Any  # the literal the release declares (None when not a literal)


def env_names(tree: Path) -> dict[str, EnvName]:
    """``class Envs``'s declarations in ``tree``'s ``sglang/srt/environ.py``."""
    path = tree / "sglang" / "srt" / "environ.py"
    if not path.is_file():
        raise KvproofInputError("the release has no sglang/srt/environ.py", str(tree))
    out: dict[str, EnvName] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.ClassDef) and node.name == "Envs"):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
                continue
            func = stmt.value.func
            kind = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            default = _literal(stmt.value.args[0]) if stmt.value.args else None
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = EnvName(target.id, kind, default)
    return out


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def typed(var: EnvName, text: str, where: str) -> Any:
    """``text`` as the release would read it (``EnvBool``: true/false, 1/0, ...)."""
    value = text.strip()
    if var.kind == "EnvBool":
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise KvproofInputError(f"{var.name} is a boolean (true/false, 1/0), got {text!r}", where)
    if var.kind in ("EnvInt", "EnvFloat"):
        try:
            return int(value) if var.kind == "EnvInt" else float(value)
        except ValueError:
            number = "an integer" if var.kind == "EnvInt" else "a number"
            raise KvproofInputError(f"{var.name} is {number}, got {text!r}", where) from None
    return value
