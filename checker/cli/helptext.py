"""``--help`` in plain words: no reStructuredText markup, and every option's default.

The commands' docstrings are written for the source (``code``, **bold**); ``--help`` shows
them without the marks. An option that takes a value says its default: "(default: X)" is
added where its help does not already say, and a trailing "(X)" becomes "(default: X)".
"""

from __future__ import annotations

import argparse
import re

_MARKS = (
    (re.compile(r"``(.+?)``", re.S), r"\1"),
    (re.compile(r"\*\*(.+?)\*\*", re.S), r"\1"),
)


def plain(text: str | None) -> str | None:
    if text is None:
        return None
    for pattern, repl in _MARKS:
        text = pattern.sub(repl, text)
    return text


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = plain(action.help) or ""
        if (
            not action.option_strings
            or action.nargs == 0
            or action.help == argparse.SUPPRESS
            or action.required
            or "default" in text.lower()
        ):
            return text
        value = action.default
        shown = "none" if value in (None, [], ()) else str(value)
        shown = shown.replace("%", "%%")  # argparse %-formats help strings
        tail = f"({shown})"
        if text.endswith(tail):
            text = text[: -len(tail)].rstrip()
        return f"{text} (default: {shown})" if text else f"default: {shown}"
