"""A byte tokenizer: token id = UTF-8 byte, 256 ids. Enough for canaries and echoes."""

from __future__ import annotations

VOCAB_SIZE = 256
# SGLang #30233 replaced an over-long prompt by ``[0]`` ("set it to one token to skip the
# long prefill"): the placeholder prompt is this one token.
PLACEHOLDER_TOKEN = 0


def encode(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def decode(tokens: list[int] | tuple[int, ...]) -> str:
    return bytes(t & 0xFF for t in tokens).decode("utf-8", errors="replace")


def render(tokens: list[int] | tuple[int, ...]) -> str:
    """Text for people: control bytes (the placeholder, stale garbage) shown as a middle dot."""
    return "".join(ch if ch.isprintable() else "\u00b7" for ch in decode(tokens))
