"""The models the engine can run, by name (``Cluster(model="tiny")``)."""

from __future__ import annotations

from kvproof.refimpl.echo_model import EchoModel
from kvproof.refimpl.model_base import Model
from kvproof.refimpl.tiny_model import TinyModel

MODELS = ("echo", "tiny")


def build_model(name: str, *, seed: int = 0, device: str = "cpu") -> Model:
    if name == "echo":
        return EchoModel(seed=seed, device=device)
    if name == "tiny":
        return TinyModel(seed=seed, device=device)
    raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
