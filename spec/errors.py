"""The one error type for bad input: the CLI turns it into exit code 2 and one line."""

from __future__ import annotations


class KvproofInputError(Exception):
    """Bad input from a user: a file, a line, a key, a value.

    ``where`` names the place (``path``, ``path:line`` or ``path: key``); the message says
    what is wrong there. ``str()`` gives the one line the CLI prints.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message
