"""The Starlette app: OpenAI routes over one ``EngineRunner``.

The server maps the engine's statuses to HTTP and nothing more: 200, 400 (rejected), 500
(transfer or check failed); an aborted request has no client left to answer (logged 499).
A client that disconnects, streaming or not, aborts its request in the engine: the path
where deferred release matters (SGLang #24527: pages freed while RDMA writes still land).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from kvproof.ops.serve import openai
from kvproof.ops.serve.metrics import prometheus
from kvproof.ops.serve.runner import EngineRunner, Ticket, Update
from kvproof.refimpl.tokenizer import render

CLIENT_GONE = 499  # nginx's "client closed request": nobody reads it, the log does


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse(openai.error_body(message, status), status_code=status)


async def _disconnected(request: Request) -> None:
    """Returns once the client has gone (the body was read: only http.disconnect is left)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _next(request: Request, ticket: Ticket, runner: EngineRunner) -> Update | None:
    """The ticket's next update, or None (and the engine aborts it) if the client left."""
    get = asyncio.ensure_future(ticket.updates.get())
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        runner.abort(ticket)
        raise
    finally:
        for task in (get, gone):
            if not task.done():
                task.cancel()
    if get in done:
        return get.result()
    runner.abort(ticket)
    return None


def build_app(runner: EngineRunner, *, manage_runner: bool = True) -> Starlette:
    cfg = runner.config
    ids = itertools.count()

    async def completions(request: Request, chat: bool) -> Response:
        try:
            tenant = openai.tenant_of(request.headers.get("authorization"))
            try:
                body: Any = await request.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise openai.BadRequest("request body is not JSON") from None
            req = openai.parse(
                body, chat=chat, model_id=cfg.model_id, max_tokens_limit=cfg.max_tokens_limit
            )
        except openai.BadRequest as exc:
            return _error(exc.message, exc.status)
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{next(ids)}"
        ticket = runner.submit(tenant, req.prompt, req.max_tokens)
        first = await _next(request, ticket, runner)
        if first is None or first.status == "aborted":
            return Response(status_code=CLIENT_GONE)
        if first.status != 200:
            return _error(first.reason or "request failed", int(first.status or 500))
        if req.stream:
            return StreamingResponse(
                _stream(request, ticket, req, rid, first), media_type="text/event-stream"
            )
        tokens, update = list(first.tokens), first
        while not update.final:
            nxt = await _next(request, ticket, runner)
            if nxt is None:
                return Response(status_code=CLIENT_GONE)
            update = nxt
            tokens += update.tokens
        body_out = openai.completion_body(req, rid, render(tokens), len(ticket.tokens), len(tokens))
        return JSONResponse(body_out)

    async def _stream(
        request: Request, ticket: Ticket, req: openai.CompletionRequest, rid: str, first: Update
    ) -> AsyncIterator[str]:
        update: Update | None = first
        count = 0
        try:
            while update is not None:
                if update.tokens:
                    count += len(update.tokens)
                    yield openai.chunk(req, rid, render(list(update.tokens)), None)
                if update.final:
                    yield openai.chunk(req, rid, "", "length")
                    if req.include_usage:
                        yield openai.usage_chunk(req, rid, len(ticket.tokens), count)
                    yield "data: [DONE]\n\n"
                    return
                update = await _next(request, ticket, runner)
        finally:
            # Starlette cancels the generator when the client disconnects mid-stream.
            if not ticket.final:
                runner.abort(ticket)

    async def completion(request: Request) -> Response:
        return await completions(request, chat=False)

    async def chat_completion(request: Request) -> Response:
        return await completions(request, chat=True)

    async def models(request: Request) -> Response:
        model = {
            "id": cfg.model_id,
            "object": "model",
            "created": 0,
            "owned_by": "kvproof",
            "context_length": cfg.sizes.context_len,  # SGLang's / OpenRouter's name
            "max_model_len": cfg.sizes.context_len,  # vLLM's name
            "root": cfg.variant.name,
        }
        return JSONResponse({"object": "list", "data": [model]})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "variant": cfg.variant.name})

    async def metrics(request: Request) -> Response:
        stats = await asyncio.to_thread(runner.stats)
        return PlainTextResponse(prometheus(stats), media_type="text/plain; version=0.0.4")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_runner:
            runner.start()
        try:
            yield
        finally:
            if manage_runner:
                await asyncio.to_thread(runner.stop)

    return Starlette(
        routes=[
            Route("/v1/completions", completion, methods=["POST"]),
            Route("/v1/chat/completions", chat_completion, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
