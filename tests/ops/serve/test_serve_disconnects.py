"""Client disconnects mid-transfer, over loopback HTTP: the live server shows the model's bug.

Each round, ``ABORTERS`` clients send a one-page prompt and give up (client timeout) while
prefill's forward pass is still running, after decode has sent it their pages; once the
server has seen every disconnect (``/metrics``), ``VICTIMS`` other tenants send an 8-token
prompt. On ``sglang-pd-early-free-abort`` decode freed the aborters'
pages at once, the victims get them (LIFO), and prefill's late writes (posted when its pass
ends, landing ``TRANSFER_US`` later) overwrite them while the victims decode: a stray write,
and another tenant's letter in a victim's 200 answer. On ``sglang-0.5.22-pd`` decode keeps
the pages until prefill ACKs the drain: nothing. Every tenant's prompt is one letter
repeated, so any other letter in an answer is a foreign canary, wherever it lands.

The echo model's i-th answer token reads prompt position i (the first comes from prefill,
later ones past the prompt read back what decode wrote itself), so a victim is exposed
while it echoes its prompt: the late write must land after the victim's own write and
before its last prompt read. An aborter's forward pass takes 1.6 s (16 tokens x 100 ms);
its client gives up at 0.25 s, after decode sent it the pages. A victim of 8 tokens arriving
g s after it posts 0.8 - g s before the late write (lands first if g < 0.8) and reads its
prompt for 6 x 150 ms after its own write landed (the late one lands inside if
0.8 - g <= 0.9): g is ~0.3 s on an idle machine, ~0.5 s on a loaded one. The buggy variant
gets ``ROUNDS`` tries to show the bug; the fixed one must stay clean in every round it runs.
"""

from __future__ import annotations

import asyncio
import string
import time

import httpx
import pytest

from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.metrics import parse_prometheus
from kvproof.ops.serve.server import BackgroundServer

BUGGY, FIXED = "sglang-pd-early-free-abort", "sglang-0.5.22-pd"
ROUNDS = 3
ABORTERS, VICTIMS = 3, 3
PREFILL_US_PER_TOKEN = 100_000.0
TRANSFER_US = 100_000.0
DECODE_US = 150_000.0
GIVE_UP_S = 0.25
VICTIM_TOKENS = 8  # prompt and answer: the answer echoes the prompt


def _metrics(c: httpx.Client) -> dict[str, float]:
    return parse_prometheus(c.get("/metrics").text)


def _wait(c: httpx.Client, key: str, at_least: float, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _metrics(c).get(key, 0) < at_least:
        assert time.monotonic() < deadline, f"{key} never reached {at_least}"
        time.sleep(0.005)


def _quiet(c: httpx.Client, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        m = _metrics(c)
        busy = m["kvproof_requests_running"] + m["kvproof_requests_waiting"]
        if busy + m["kvproof_transfers_in_flight"] == 0:
            return
        assert time.monotonic() < deadline, "the engine did not go quiet"
        time.sleep(0.02)


async def _aborter(client: httpx.AsyncClient, letter: str) -> None:
    body = {"prompt": letter * 16, "max_tokens": 8}
    with pytest.raises(httpx.TimeoutException):
        await client.post(
            "/v1/completions", json=body, headers={"Authorization": f"Bearer {letter}"}
        )


async def _victim(client: httpx.AsyncClient, letter: str) -> str:
    body = {"prompt": letter * VICTIM_TOKENS, "max_tokens": VICTIM_TOKENS}
    r = await client.post(
        "/v1/completions", json=body, headers={"Authorization": f"Bearer {letter}"}
    )
    assert r.status_code == 200, r.text
    return str(r.json()["choices"][0]["text"])


def _round(srv: BackgroundServer, n: int) -> tuple[float, int]:
    """One round: (stray writes so far, victims whose answer holds a foreign letter)."""
    letters = string.ascii_letters[n * (ABORTERS + VICTIMS) :][: ABORTERS + VICTIMS]
    bad, good = letters[:ABORTERS], letters[ABORTERS:]
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        aborted = _metrics(c).get("kvproof_aborts_total", 0)

        async def aborts() -> None:
            async with httpx.AsyncClient(base_url=srv.url, timeout=GIVE_UP_S) as client:
                await asyncio.gather(*(_aborter(client, x) for x in bad))

        async def victims() -> list[str]:
            async with httpx.AsyncClient(base_url=srv.url, timeout=30) as client:
                return await asyncio.gather(*(_victim(client, x) for x in good))

        asyncio.run(aborts())
        _wait(c, "kvproof_aborts_total", aborted + ABORTERS)  # the server saw them go
        answers = asyncio.run(victims())
        _quiet(c)
        stray = _metrics(c)["kvproof_oracle_stray_writes_total"]
    # A foreign canary: a disconnected tenant's letter in another tenant's 200 answer.
    foreign = sum(1 for text in answers if set(text) & set(bad))
    clean = sum(1 for x, text in zip(good, answers, strict=True) if text == x * VICTIM_TOKENS)
    assert foreign + clean == VICTIMS, answers  # no third kind of answer
    return stray, foreign


def _server(variant: str) -> BackgroundServer:
    cfg = ServeConfig.for_variant(
        variant,
        prefill_us_per_token=PREFILL_US_PER_TOKEN,
        transfer_us_per_page=TRANSFER_US,
        decode_us_per_token=DECODE_US,
    )
    return BackgroundServer(cfg)


def test_buggy_variant_shows_late_writes_and_foreign_text() -> None:
    with _server(BUGGY) as srv:
        for n in range(ROUNDS):
            stray, foreign = _round(srv, n)
            if stray and foreign:
                break
    assert stray > 0, "no late write landed in a reallocated page"
    assert foreign > 0, "no victim's 200 answer held another tenant's text"


def test_fixed_variant_shows_nothing() -> None:
    with _server(FIXED) as srv:
        for n in range(2):
            stray, foreign = _round(srv, n)
            assert (stray, foreign) == (0, 0), f"round {n}"
        with httpx.Client(base_url=srv.url) as c:
            m = _metrics(c)
    assert m["kvproof_oracle_stale_reads_total"] == 0
    assert m['kvproof_pool_pages_in_use{node="decode"}'] == 0  # drained, ACKed, released
