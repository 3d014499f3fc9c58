"""An OpenAI-compatible HTTP server over the disaggregated reference engine.

``EngineRunner`` (``runner.py``) owns one ``Cluster`` in a worker thread and steps it for
every request in flight; ``build_app`` (``app.py``) is the Starlette app that maps engine
statuses to HTTP; ``BackgroundServer`` (``server.py``) runs it on a loopback port.
"""

from kvproof.ops.serve.config import ServeConfig
from kvproof.ops.serve.runner import EngineRunner, Ticket

__all__ = ["EngineRunner", "ServeConfig", "Ticket"]
