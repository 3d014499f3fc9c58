"""The probe's HTTP side: ``/v1/models`` and streamed ``/v1/completions``, timed.

Anything that is not an OpenAI-compatible answer (unreachable, not JSON, no ``data`` or
``choices``) is bad input for the probe: ``KvproofInputError``, exit 2. API keys go into the
``Authorization`` header and nowhere else.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from kvproof.ops.probe.findings import Sample
from kvproof.spec.errors import KvproofInputError


class OpenAIClient:
    def __init__(self, url: str, *, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def _get_json(self, path: str, key: str) -> Any:
        try:
            r = self.http.get(self.url + path, headers={"Authorization": f"Bearer {key}"})
        except httpx.HTTPError as exc:
            raise KvproofInputError(
                f"cannot reach the endpoint ({type(exc).__name__})", self.url
            ) from None
        try:
            return r.status_code, r.json()
        except ValueError:
            raise KvproofInputError(
                f"GET {path} answered {r.status_code} with no JSON: not an OpenAI endpoint",
                self.url,
            ) from None

    def models(self, key: str) -> tuple[str, int | None]:
        """(model id, advertised context length or None)."""
        status, body = self._get_json("/v1/models", key)
        data = body.get("data") if isinstance(body, dict) else None
        if status != 200 or not isinstance(data, list) or not data or "id" not in data[0]:
            raise KvproofInputError(
                f"GET /v1/models answered {status} without a model list: not an OpenAI endpoint",
                self.url,
            )
        m = data[0]
        for name in ("context_length", "max_model_len", "max_context_length"):
            if isinstance(m.get(name), int):
                return str(m["id"]), int(m[name])
        return str(m["id"]), None

    def complete(
        self, key: str, model: str, prompt: str, max_tokens: int, tenant: str, purpose: str
    ) -> Sample:
        """One streamed completion; time to first token measured at the first text chunk."""
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True}
        body["temperature"] = 0
        body["stream_options"] = {"include_usage": True}
        headers = {"Authorization": f"Bearer {key}"}
        t0 = time.perf_counter()
        ttft: float | None = None
        parts: list[str] = []
        usage: int | None = None
        try:
            with self.http.stream(
                "POST", self.url + "/v1/completions", json=body, headers=headers
            ) as r:
                ctype = r.headers.get("content-type", "")
                if r.status_code != 200 or "text/event-stream" not in ctype:
                    raw = r.read()
                    ttft = time.perf_counter() - t0
                    return self._plain(r.status_code, raw, prompt, tenant, purpose, ttft)
                for line in r.iter_lines():
                    if not line.startswith("data:") or line.strip() == "data: [DONE]":
                        continue
                    event = self._json(line[5:], "stream chunk")
                    choice = (event.get("choices") or [{}])[0]
                    text = choice.get("text") or (choice.get("delta") or {}).get("content") or ""
                    if text and ttft is None:
                        ttft = time.perf_counter() - t0
                    parts.append(text)
                    if isinstance(event.get("usage"), dict):
                        usage = event["usage"].get("prompt_tokens")
        except httpx.HTTPError as exc:
            raise KvproofInputError(f"request failed ({type(exc).__name__})", self.url) from None
        total = time.perf_counter() - t0
        return Sample(
            tenant, purpose, len(prompt), usage, 200, "".join(parts), ttft if ttft else total
        )

    def _json(self, raw: str | bytes, what: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            raise KvproofInputError(
                f"{what} is not JSON: not an OpenAI endpoint", self.url
            ) from None

    def _plain(
        self, status: int, raw: bytes, prompt: str, tenant: str, purpose: str, ttft: float
    ) -> Sample:
        body = self._json(raw, f"completion answer ({status})") if raw else {}
        if status == 200:
            choices = body.get("choices") if isinstance(body, dict) else None
            if not isinstance(choices, list) or not choices:
                raise KvproofInputError("completion without 'choices': not OpenAI", self.url)
            text = str(choices[0].get("text", ""))
        else:
            text = ""
        usage = body.get("usage") if isinstance(body, dict) else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return Sample(tenant, purpose, len(prompt), tokens, status, text, ttft)
