"""The SGLang release a node's version behaves as, from ``spec/releases.toml``.

The audit reads a version from a log or ``/server_info`` (``0.5.22``, ``v0.5.22.post1``) and
asks the release table what that release does by default and which fixes it has; no
release fact is kept here.
"""

from __future__ import annotations

import re

from kvproof.ops.audit.facts import Value
from kvproof.spec import releases
from kvproof.spec.releases import Release


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """'0.5.22', 'v0.5.22.post1', '0.5.3rc0' -> (0, 5, 22); None when unreadable."""
    if not text:
        return None
    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def release_of(version: str | None) -> Release | None:
    """The known release a node's version behaves as: the newest one not newer than it (a
    ``.post1`` build is its release; a release newer than the table, the newest known); one
    older than every known release is taken as the oldest. None when the version is unknown."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    known = releases.sglang()
    older = [r for r in known if releases.version_key(r.version) <= parsed]
    return older[-1] if older else known[0]


def default(fact: str, version: str | None) -> Value | None:
    """``fact``'s default on ``version``. Unknown version: the value every release that has
    the setting agrees on, else None. Deferred release where the release has no deferred
    release at all: off."""
    rel = release_of(version)
    if rel is None:
        values = {r.default(fact) for r in releases.sglang()} - {None}
        return values.pop() if len(values) == 1 else None
    value = rel.default(fact)
    no_machinery = rel.fact("deferred_release_machinery") is False
    if value is None and fact == "deferred_release" and no_machinery:
        return False
    return value


def first(test: str, value: Value) -> str:
    """The oldest known release whose default or fact ``test`` is ``value`` (e.g. the first
    with deferred release on by default), for the audit's words."""
    for rel in releases.sglang():
        if rel.default(test) == value or rel.fact(test) == value:
            return rel.version
    raise KeyError(f"{test} = {value!r}: in no release of spec/releases.toml")


def since(test: str, value: Value) -> tuple[int, ...]:
    """``first`` as a version tuple, to compare with ``parse_version``."""
    return releases.version_key(first(test, value))
