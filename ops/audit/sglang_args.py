"""SGLang server arguments, read the same way from every place they appear.

The three sources hold the same ``ServerArgs`` fields (python/sglang/srt/server_args.py):

- ``/server_info``: ``{**asdict(server_args), **scheduler_info, ...}`` (JSON);
- older startup logs: ``server_args=ServerArgs(key=value, ...)`` (the dataclass repr);
- newer startup logs: ``server_args={'key': value, ...}``, printed by
  ``logger.info(f"server_args={server_args.resolved_dict()}")`` in
  python/sglang/srt/entrypoints/engine.py (a Python dict literal).

Both log forms are parsed with ``ast``: each value is read with ``literal_eval``, so a value
that is not a literal (an enum repr, a path object) is skipped instead of guessed. Keys the
audit does not know are ignored; a known key of the wrong type is an input error naming the
file and key, never quoting the value (``api_key`` sits in the same dict).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from kvproof.ops.audit.facts import Fact
from kvproof.spec.errors import KvproofInputError

# server arg -> (fact, expected type). Verified against server_args.py and the upstream
# tests that list them (test_server_args: disaggregation_decode_enable_radix_cache,
# disaggregation_enable_kv_checksum; default num_reserved_decode_tokens = 512).
ARGS: dict[str, tuple[str, type]] = {
    "page_size": ("page_size", int),
    "context_length": ("context_len", int),
    "disaggregation_enable_kv_checksum": ("transfer_checksum", bool),
    "disaggregation_transfer_backend": ("transfer_backend", str),
    "disaggregation_decode_enable_radix_cache": ("decode_radix_cache", bool),
    "num_reserved_decode_tokens": ("reserved_decode_tokens", int),
}

MODES = {"null": "single", "None": "single", "prefill": "prefill", "decode": "decode"}


def _typed(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def arg_facts(args: Mapping[str, Any], where: str, key_where: bool) -> dict[str, Fact]:
    """Facts from a mapping of server args. ``where`` is ``path`` (JSON: errors and
    evidence name ``path: key``) or ``path:line`` (a log line)."""
    facts: dict[str, Fact] = {}

    def place(key: str) -> str:
        return f"{where}: {key}" if key_where else where

    for key, (fact, kind) in ARGS.items():
        value = args.get(key)
        if value is None:  # absent, or None (= the default chooses)
            continue
        if not _typed(value, kind):
            raise KvproofInputError(f"must be a {kind.__name__}", f"{where}: {key}")
        if kind is int and value <= 0:
            raise KvproofInputError("must be a positive integer", f"{where}: {key}")
        facts[fact] = Fact(value, place(key))
    mode = args.get("disaggregation_mode")
    if mode is not None:
        if not isinstance(mode, str) or mode not in MODES:
            raise KvproofInputError(
                "must be 'null', 'prefill' or 'decode'", f"{where}: disaggregation_mode"
            )
        facts["role"] = Fact(MODES[mode], place("disaggregation_mode"))
    if "disaggregation_enable_kv_checksum" not in args and "transfer_checksum" not in facts:
        # The whole dataclass is printed, and the option defaults to off: absent means off
        # (a release before #39500 has no such option at all).
        facts["transfer_checksum"] = Fact(
            False, f"{place('disaggregation_enable_kv_checksum')} (absent: off)"
        )
    return facts


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _by_key(expr: str) -> dict[str, Any]:
    """The known keys, one by one, from a repr that is not Python as a whole (a field whose
    repr is ``<Enum.X: 'x'>`` or ``PosixPath(...)``)."""
    out: dict[str, Any] = {}
    for key in (*ARGS, "disaggregation_mode"):
        pattern = rf"""['"]?\b{key}['"]?\s*[:=]\s*('[^']*'|"[^"]*"|[^,)}}\s]+)"""
        match = re.search(pattern, expr)
        if match is None:
            continue
        try:
            out[key] = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            continue  # not a literal: skipped, never guessed
    return out


def parse_logged(expr: str, where: str) -> dict[str, Any]:
    """``ServerArgs(k=v, ...)`` or ``{'k': v, ...}`` as printed in a log line -> a dict.

    A line that does not end where it began was cut off (a truncated file): an input error
    at that line. One that ends but does not parse holds a non-literal repr: read by key.
    """
    text = expr.strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        if text.endswith(")" if text.startswith("ServerArgs(") else "}"):
            return _by_key(text)
        raise KvproofInputError("incomplete 'server_args=' line (truncated file?)", where) from None
    out: dict[str, Any] = {}
    if isinstance(tree, ast.Call):
        for kw in tree.keywords:
            ok, value = _literal(kw.value)
            if kw.arg is not None and ok:
                out[kw.arg] = value
    elif isinstance(tree, ast.Dict):
        for k, v in zip(tree.keys, tree.values, strict=True):
            ok_k, key = _literal(k) if k is not None else (False, None)
            ok_v, value = _literal(v)
            if ok_k and ok_v and isinstance(key, str):
                out[key] = value
    else:
        raise KvproofInputError("'server_args=' is neither ServerArgs(...) nor {...}", where)
    return out
