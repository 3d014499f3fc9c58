"""Last line of defence before output: no credential in a URL ever leaves the audit.

Parsers never store ``api_key`` or secret-named variables, so no fact holds one. But a node
name, a path or a version string comes from the operator and may carry a URL with
credentials (``https://user:token@host``, ``?token=...``): those parts are masked in text,
JSON and error-free output alike.
"""

from __future__ import annotations

import re
from typing import Any

USERINFO = re.compile(r"(\b[a-zA-Z][\w+.-]*://)[^/\s@]+@")
QUERY_SECRET = re.compile(
    r"([?&][\w-]*(?:key|token|secret|password|sig)[\w-]*=)[^&\s'\"]+", re.IGNORECASE
)
MASK = "***"


def scrub(text: str) -> str:
    return QUERY_SECRET.sub(rf"\g<1>{MASK}", USERINFO.sub(rf"\g<1>{MASK}@", text))


def scrub_all(value: Any) -> Any:
    """``scrub`` every string in a JSON-shaped value (keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_all(k): scrub_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_all(v) for v in value]
    return value
