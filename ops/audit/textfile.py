"""Reading an operator's file as text, and finding numbered lines in it.

Errors never quote the file's content: logs and server_info carry the ``api_key``, and an
error message is output too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kvproof.spec.errors import KvproofInputError


def read_text(path: str) -> str:
    """The file's text; a missing, unreadable or binary file is a ``KvproofInputError``."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise KvproofInputError("is a directory, not a file", path) from None
    except OSError as exc:
        raise KvproofInputError(f"cannot read: {exc.strerror}", path) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise KvproofInputError(
            "binary data (NUL byte), not a log, JSON or metrics text", f"{path}:{line}"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise KvproofInputError("not UTF-8 text", f"{path}:{line}") from None


def numbered(text: str) -> Iterator[tuple[int, str]]:
    """(line number from 1, line) for every line."""
    return enumerate(text.splitlines(), start=1)


def last_line_no(text: str) -> int:
    return max(1, len(text.splitlines()))


@dataclass(frozen=True)
class Anchor:
    """A line an engine prints, found by ``marker`` and read with ``pattern``.

    A line that has the marker but does not match the pattern was cut off (a truncated
    file) or is not what the engine prints: an error at that line, never a guess.
    """

    name: str
    marker: str
    pattern: re.Pattern[str]

    def find_all(self, text: str, path: str) -> list[tuple[re.Match[str], int]]:
        found = []
        for no, line in numbered(text):
            if self.marker not in line:
                continue
            match = self.pattern.search(line)
            if match is None:
                raise KvproofInputError(
                    f"incomplete '{self.name}' line (truncated file?)", f"{path}:{no}"
                )
            found.append((match, no))
        return found


def to_int(digits: str) -> int:
    """'2,902,470' -> 2902470 (vLLM prints thousands separators)."""
    return int(digits.replace(",", "").replace("_", ""))
