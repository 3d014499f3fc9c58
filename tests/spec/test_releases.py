"""``spec/releases.toml``: the one table of SGLang releases, held to the wheels it cites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvproof.checker.upstream import fetch
from kvproof.checker.upstream.adapters import registry
from kvproof.spec import releases


def test_table_shape_and_api() -> None:
    versions = [r.version for r in releases.sglang()]
    assert versions[:2] == ["0.4.10", "0.5.1"] and versions[-1] == "0.5.23"
    r = releases.get("sglang", "0.5.20")
    assert r is not None and r.adapter == "0.5.19-0.5.20" and r.no_adapter is None
    assert r.default("deferred_release") is False
    assert r.env("deferred_release") == "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"
    assert releases.get("sglang", "9.9.9") is None
    assert releases.adapted("sglang") == fetch.RELEASES
    for rel in releases.sglang():
        assert all("::" in s.source for s in (*rel.defaults, *rel.facts)), rel.version


def test_every_named_adapter_exists() -> None:
    assert set(registry()) == {r.adapter for r in releases.sglang() if r.adapter}


def _cached(version: str) -> Path:
    tree = fetch.cache_root() / version
    if not (tree / fetch.MARKER).is_file():
        pytest.skip(f"sglang {version} is not unpacked in {fetch.cache_root()}")
    return tree


@pytest.mark.parametrize(
    "version",
    [r.version for r in releases.sglang() if releases.version_key(r.version) >= (0, 5, 15)],
)
def test_env_defaults_are_the_wheels(version: str) -> None:
    """Each default whose source is ``environ.py::Envs`` is the wheel's declaration."""
    text = (_cached(version) / "sglang" / "srt" / "environ.py").read_text(encoding="utf-8")
    rel = releases.get("sglang", version)
    assert rel is not None
    for s in rel.defaults:
        found = re.search(rf"^\s+{s.env} = Env\w+\(([^)]*)\)", text, re.M)
        assert found, (version, s.env)
        assert str(found.group(1)).lower() == str(s.value).lower(), (version, s.name)


def test_known_release_without_adapter_is_refused_by_name() -> None:
    from kvproof.spec.errors import KvproofInputError

    with pytest.raises(KvproofInputError, match=r"no adapter for SGLang 0\.5\.1: .*environ\.py"):
        fetch.resolve("0.5.1")
