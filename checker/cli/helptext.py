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


# ``kvproof --help`` opens with where to start (issue 41: 13 commands and no first step).
# A command whose module this checkout lacks is left out (``parser.COMMANDS``).
START_HERE = (
    ("advise", "kvproof advise sglang==0.5.20", "is my release safe, and what do I change?"),
    ("demo", "kvproof demo incident", "the 2026 leak, reproduced on the reference engine"),
    ("check", "kvproof check sglang==0.5.20", "the model's verdicts, shortest counterexamples"),
    ("conform", "kvproof conform sglang==0.5.22", "the release's own code against the model"),
    ("variants", "kvproof variants", "the engine versions kvproof models, by release"),
)


def start_here(commands: set[str]) -> str:
    """The "start here" lines for the commands this checkout has."""
    rows = [(cmd, what) for name, cmd, what in START_HERE if name in commands]
    width = max(len(cmd) for cmd, _ in rows)
    lines = [f"  {cmd:<{width}}  {what}" for cmd, what in rows]
    return (
        "start here:\n"
        + "\n".join(lines)
        + "\n(README.md: a five-minute tour; docs/cli.md: every command)"
    )
