"""The OpenAI server over the reference engine: routes, statuses, concurrency, disconnects.

Servers run in-process on a free loopback port (``BackgroundServer``); leaks are read from
the engine's ground truth (the oracle counters of ``EngineRunner.stats``).
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.metrics import parse_prometheus
from kvproof.ops.serve.server import BackgroundServer

FIXED = "sglang-0.5.22-pd"
KEY_A = {"Authorization": "Bearer tenant-a-key"}
KEY_B = {"Authorization": "Bearer tenant-b-key"}


def _wait_quiet(srv: BackgroundServer, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = srv.runner.stats()
        if s.requests_live == 0 and s.requests_waiting == 0 and s.transfers_in_flight == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the engine did not go quiet")


@pytest.fixture(scope="module")
def fixed() -> BackgroundServer:
    with BackgroundServer(ServeConfig.for_variant(FIXED, transfer_us_per_page=0)) as srv:
        yield srv


def test_routes_and_statuses(fixed: BackgroundServer) -> None:
    with httpx.Client(base_url=fixed.url, timeout=30) as c:
        assert c.get("/health").json()["status"] == "ok"
        model = c.get("/v1/models").json()["data"][0]
        assert model["id"] == "kvproof-echo" and model["context_length"] == 512
        r = c.post("/v1/completions", json={"prompt": "hello tenant", "max_tokens": 5})
        assert r.status_code == 401
        r = c.post(
            "/v1/completions", json={"prompt": "hello tenant a", "max_tokens": 5}, headers=KEY_A
        )
        assert r.status_code == 200
        body = r.json()
        assert body["choices"][0]["text"] == "hello" and body["usage"]["prompt_tokens"] == 14
        chat = {"messages": [{"role": "user", "content": "chat me"}], "max_tokens": 4}
        r = c.post("/v1/chat/completions", json=chat, headers=KEY_A)
        assert r.json()["choices"][0]["message"]["content"] == "chat"
        # Prefill's limit (330 on the incident's sizes): the fixed engine rejects with 400.
        r = c.post("/v1/completions", json={"prompt": "x" * 400, "max_tokens": 4}, headers=KEY_B)
        assert r.status_code == 400 and "prefill" in r.json()["error"]["message"]
        with c.stream(
            "POST", "/v1/chat/completions", json={**chat, "stream": True}, headers=KEY_A
        ) as s:
            lines = [ln for ln in s.iter_lines() if ln.startswith("data:")]
        assert s.status_code == 200 and lines[-1] == "data: [DONE]"
        metrics = parse_prometheus(c.get("/metrics").text)
        assert metrics['kvproof_pool_pages{node="decode"}'] == 64
        assert metrics["kvproof_rejects_total"] >= 1
        assert "kvproof_transfers_in_flight" in metrics
        assert metrics["kvproof_guard_trips_total"] == 0


def test_buggy_variant_answers_200_with_foreign_text() -> None:
    cfg = ServeConfig.for_variant("sglang-0.5.19-pd", transfer_us_per_page=0)
    canary = "<SECRET-OF-A-42> " * 6
    with BackgroundServer(cfg) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        assert (
            c.post(
                "/v1/completions", json={"prompt": canary, "max_tokens": 8}, headers=KEY_A
            ).status_code
            == 200
        )
        r = c.post("/v1/completions", json={"prompt": "y" * 400, "max_tokens": 48}, headers=KEY_B)
        assert r.status_code == 200  # the engine's answer, not the server's
        assert "SECRET-OF-A-42" in r.json()["choices"][0]["text"]


@pytest.mark.slow
def test_32_concurrent_clients_lose_nothing_and_leak_nothing(fixed: BackgroundServer) -> None:
    prompts = [f"client {i:02d} says: " + chr(65 + i % 26) * (20 + i) for i in range(32)]

    async def one(client: httpx.AsyncClient, i: int) -> tuple[int, str]:
        key = KEY_A if i % 2 else KEY_B
        stream = i % 4 == 0
        body = {"prompt": prompts[i], "max_tokens": 12, "stream": stream}
        if not stream:
            r = await client.post("/v1/completions", json=body, headers=key)
            return r.status_code, r.json()["choices"][0]["text"]
        parts = []
        async with client.stream("POST", "/v1/completions", json=body, headers=key) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: {"):
                    parts.append(httpx.Response(200, content=line[6:]).json()["choices"][0]["text"])
        return r.status_code, "".join(parts)

    async def main() -> list[tuple[int, str]]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(base_url=fixed.url, timeout=60, limits=limits) as client:
            return await asyncio.gather(*(one(client, i) for i in range(32)))

    before = fixed.runner.stats()
    results = asyncio.run(main())
    _wait_quiet(fixed)
    after = fixed.runner.stats()
    assert [status for status, _ in results] == [200] * 32
    for i, (_, text) in enumerate(results):
        assert text == prompts[i][:12]  # the echo model reads back its own prompt
    assert after.responses["200"] - before.responses.get("200", 0) == 32
    assert after.stray_writes == 0 and after.stale_reads == 0
    assert after.decode_pages_in_use == 0


async def _disconnect_mid_transfer(srv: BackgroundServer) -> None:
    """Tenant A's request is cut while its RDMA writes are in flight; B then needs pages."""
    async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
        body = {"prompt": "<A-PRIVATE-77> " * 12, "max_tokens": 8}
        task = asyncio.create_task(client.post("/v1/completions", json=body, headers=KEY_A))
        deadline = time.monotonic() + 10
        while srv.runner.stats().transfers_in_flight == 0:
            assert time.monotonic() < deadline, "no transfer started"
            await asyncio.sleep(0.002)
        task.cancel()  # the client disconnects mid-transfer
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)  # the server sees the disconnect and aborts
        r = await client.post(
            "/v1/completions", json={"prompt": "b" * 64, "max_tokens": 8}, headers=KEY_B
        )
        assert r.status_code == 200


@pytest.mark.parametrize(
    ("variant", "leaks"), [(FIXED, False), ("sglang-pd-early-free-abort", True)]
)
def test_disconnect_mid_transfer(variant: str, leaks: bool) -> None:
    # Slow simulated RDMA (150 ms a page) keeps the writes in flight across the disconnect.
    cfg = ServeConfig.for_variant(variant, transfer_us_per_page=150_000, prefill_us_per_token=0)
    with BackgroundServer(cfg) as srv:
        asyncio.run(_disconnect_mid_transfer(srv))
        _wait_quiet(srv)
        stats = srv.runner.stats()
    assert stats.responses.get("aborted", 0) == 1
    assert (stats.stray_writes > 0) == leaks
    if not leaks:
        assert stats.decode_pages_in_use == 0  # drained, ACKed, released
