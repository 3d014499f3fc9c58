"""Run the app with uvicorn: in the foreground (the CLI) or in a background thread (tests,
benchmarks, notebooks), bound to loopback by default."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn

from kvproof.ops.serve.app import build_app
from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.runner import EngineRunner

LOOPBACK = "127.0.0.1"


def serve_forever(
    config: ServeConfig,
    host: str = LOOPBACK,
    port: int = 8000,
    sock: socket.socket | None = None,
) -> None:
    """Serve until interrupted; ``sock``: an already bound listening socket (the CLI binds
    first, so a port in use or a bad host is bad input before the engine is built)."""
    runner = EngineRunner(config)
    if sock is None:
        uvicorn.run(build_app(runner), host=host, port=port, log_level="warning")
        return
    uv_config = uvicorn.Config(build_app(runner), log_level="warning", lifespan="on")
    uvicorn.Server(uv_config).run(sockets=[sock])


class BackgroundServer:
    """``with BackgroundServer(config) as srv: httpx.get(srv.url + "/health")``.

    Binds a free loopback port before starting, so ``url`` is valid at once.
    """

    def __init__(self, config: ServeConfig, host: str = LOOPBACK) -> None:
        self.runner = EngineRunner(config)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        uv_config = uvicorn.Config(build_app(self.runner), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(uv_config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the kvproof server did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()
