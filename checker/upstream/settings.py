"""The environment and server args a conform run uses: the variant's ``[upstream]`` tables
over the release's own defaults, each key checked against the release's names.

Env names are the attributes of ``sglang/srt/environ.py::Envs`` (the release's ``envs``);
server-arg names and defaults are read (not run) from the release's field declarations:
``sglang/srt/arg_groups/fields/*.py`` (0.5.21+) or ``sglang/srt/server_args.py::ServerArgs``.
"""

from __future__ import annotations

import ast
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


def server_arg_defaults(tree: Path) -> dict[str, Any]:
    srt = tree / "sglang" / "srt"
    files = [*sorted((srt / "arg_groups" / "fields").glob("*.py")), srt / "server_args.py"]
    out: dict[str, Any] = {}
    for file in files:
        if not file.is_file():
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        out.setdefault(stmt.target.id, _literal(stmt.value))
    return out


def _literal(node: Any) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def check_env(env: dict[str, Any], envs: Any, where: str) -> None:
    for key in env:
        if not hasattr(type(envs), key):
            raise KvproofInputError(f"'upstream.env.{key}' is not an SGLang env name", where)


def check_server_args(args: dict[str, Any], defaults: dict[str, Any], where: str) -> None:
    for key in args:
        if key not in defaults:
            raise KvproofInputError(
                f"'upstream.server_args.{key}' is not an SGLang server arg", where
            )


@contextmanager
def environment(env: dict[str, Any]) -> Iterator[None]:
    """``os.environ`` with the table's values for the run (SGLang's ``EnvBool`` reads
    ``true``/``false``), restored afterwards."""
    saved = {k: os.environ.get(k) for k in env}
    try:
        for key, value in env.items():
            os.environ[key] = str(value).lower() if isinstance(value, bool) else str(value)
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


@contextmanager
def quiet(name: str) -> Iterator[None]:
    """The release's own log lines (every abort logs an error) kept out of the verdict."""
    logger = logging.getLogger(name)
    old = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(old)
