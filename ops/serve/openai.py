"""The OpenAI wire format: parse completion requests, shape answers, errors and chunks.

Only what a client of ``/v1/completions`` and ``/v1/chat/completions`` needs; unknown
fields are ignored as OpenAI-compatible servers do. The tenant is the bearer key, hashed
(the key itself never reaches the engine, a log or a report).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_TOKENS = 16


class BadRequest(Exception):
    """A request the server cannot parse: 400 (or ``status``), before the engine sees it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class CompletionRequest:
    prompt: str
    max_tokens: int
    stream: bool
    chat: bool
    model: str
    include_usage: bool = False  # stream_options.include_usage: a last chunk with usage


def tenant_of(authorization: str | None) -> str:
    """``Authorization: Bearer KEY`` -> a tenant id derived from the key (never the key)."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise BadRequest("missing bearer API key (Authorization: Bearer ...)", 401)
    key = authorization[7:].strip()
    if not key:
        raise BadRequest("empty bearer API key", 401)
    return "tenant-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def parse(body: Any, *, chat: bool, model_id: str, max_tokens_limit: int) -> CompletionRequest:
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        parts = []
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if not isinstance(content, str):
                raise BadRequest("every message needs a string 'content'")
            parts.append(content)
        prompt = "\n".join(parts)
    else:
        given = body.get("prompt")
        if isinstance(given, list) and len(given) == 1 and isinstance(given[0], str):
            given = given[0]
        if not isinstance(given, str):
            raise BadRequest("'prompt' must be a string")
        prompt = given
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", DEFAULT_MAX_TOKENS))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest("'max_tokens' must be a positive integer")
    if max_tokens > max_tokens_limit:
        raise BadRequest(f"'max_tokens' must be at most {max_tokens_limit}")
    model = body.get("model") or model_id
    if model != model_id:
        raise BadRequest(f"model {model!r} does not exist (this server has {model_id!r})", 404)
    opts = body.get("stream_options")
    usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
    stream = bool(body.get("stream", False))
    return CompletionRequest(prompt, max_tokens, stream, chat, model, usage)


def error_body(message: str, status: int) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "internal_server_error"
    return {"error": {"message": message, "type": kind, "code": status}}


def completion_body(
    req: CompletionRequest, rid: str, text: str, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": "length", "logprobs": None}
    if req.chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {
        "id": rid,
        "object": "chat.completion" if req.chat else "text_completion",
        "created": int(time.time()),
        "model": req.model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def usage_chunk(req: CompletionRequest, rid: str, prompt_tokens: int, completion: int) -> str:
    """The last event when ``stream_options.include_usage`` asked for it (no choices)."""
    body = completion_body(req, rid, "", prompt_tokens, completion)
    body["object"] = "chat.completion.chunk" if req.chat else "text_completion"
    body["choices"] = []
    return f"data: {json.dumps(body)}\n\n"


def chunk(req: CompletionRequest, rid: str, text: str, finish: str | None) -> str:
    """One server-sent event of a streamed answer."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if req.chat:
        choice["delta"] = {"content": text} if text else {}
    else:
        choice["text"] = text
    body = {
        "id": rid,
        "object": "chat.completion.chunk" if req.chat else "text_completion",
        "created": int(time.time()),
        "model": req.model,
        "choices": [choice],
    }
    return f"data: {json.dumps(body)}\n\n"
