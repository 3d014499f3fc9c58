"""Where each key of a variant file is: ``"expect.isolation" -> 52``, for reports that
point at a line (SARIF). ``tomllib`` keeps no positions, so this is a small scan of the
shapes variant files use: ``[table]`` headers, ``key = value`` lines, values that run over
several lines (a ``\"\"\"`` string, a ``[ ... ]`` list). It runs after ``tomllib`` accepted
the text, so it never has to judge malformed input.
"""

from __future__ import annotations

import re

_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\"-]+)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_-]+)\"?\s*=\s*(.*)$")


def key_lines(text: str) -> dict[str, int]:
    """1-based line of every table header (``"expect"``) and key (``"expect.isolation"``,
    top-level ``"name"``); the first occurrence wins."""
    out: dict[str, int] = {}
    table = ""
    open_string = False  # inside a multi-line basic string
    depth = 0  # inside a multi-line array
    for number, line in enumerate(text.splitlines(), start=1):
        if open_string:
            open_string = line.count('"""') % 2 == 0
            continue
        if depth > 0:
            depth += _brackets(line)
            continue
        header = _TABLE.match(line)
        if header:
            table = ".".join(part.strip('"') for part in header.group(1).split("."))
            out.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        out.setdefault(f"{table}.{key.group(1)}" if table else key.group(1), number)
        value = key.group(2)
        if value.count('"""') % 2 == 1:
            open_string = True
        elif value.startswith("["):
            depth = _brackets(value)
    return out


def _brackets(text: str) -> int:
    """Net ``[`` minus ``]`` outside strings and comments."""
    net, quote, escaped = 0, "", False
    for ch in text:
        if escaped:
            escaped = False
        elif quote:
            escaped = ch == "\\" and quote == '"'
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch == "[":
            net += 1
        elif ch == "]":
            net -= 1
    return net
