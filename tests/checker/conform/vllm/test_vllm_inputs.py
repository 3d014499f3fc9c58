"""Bad input to ``conform --vllm``: exit 2 and one line, before any walk (issue 40)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conform.vllm import adapters, fetch
from kvproof.spec.errors import KvproofInputError


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["sglang-0.5.22-pd", "--vllm", "0.34.0"], "not a vLLM variant"),
        (["vllm-0.34-nixl-pull", "--sglang", "0.5.22"], "pass --vllm"),
        (["vllm-0.34-nixl-pull", "--sglang", "0.5.22", "--vllm", "0.34.0"], "not both"),
        (["vllm-0.34-nixl-pull", "--vllm", "/nonexistent/tree"], "not a vLLM tree"),
        (["vllm-0.34-nixl-pull", "--vllm", "latest!"], "not a vLLM version"),
        (["vllm-nixl-fixed"], "pass --vllm VERSION|PATH"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], says: str, capsys) -> None:
    assert main(["conform", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_an_unreachable_index_says_to_pass_a_path(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("KVPROOF_VLLM_WHEELS", raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(KvproofInputError) as exc:
        fetch.resolve("0.33.99")
    assert "--vllm PATH" in str(exc.value) or "unknown vLLM version" in str(exc.value)


def test_a_release_without_an_adapter_is_refused_naming_what_differs(tmp_path: Path) -> None:
    (tmp_path / fetch.MARKER).parent.mkdir(parents=True)
    (tmp_path / fetch.MARKER).write_text("")
    with pytest.raises(KvproofInputError, match=r"no adapter: this vLLM has no vllm/.*/nixl/"):
        adapters.select(tmp_path)
    nixl = tmp_path / adapters.NIXL
    nixl.mkdir(parents=True)
    with pytest.raises(KvproofInputError, match=r"no adapter for this vLLM.*base_worker\.py"):
        adapters.select(tmp_path)


def test_the_cached_release_has_an_adapter(vllm_tree: Path) -> None:
    assert adapters.select(vllm_tree).name == "vllm-0.34"


def test_a_local_wheel_is_unpacked_once_python_sources_only(tmp_path, monkeypatch) -> None:
    """KVPROOF_VLLM_WHEELS is looked in before the index; only ``vllm/**.py`` is kept."""
    import zipfile

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "vllm-9.9.9-cp38-abi3-manylinux_2_28_x86_64.whl", "w") as z:
        z.writestr(fetch.MARKER.as_posix(), "# the scheduler\n")
        z.writestr("vllm/_C.abi3.so", b"\x7fELF")
        z.writestr("vllm-9.9.9.dist-info/METADATA", "Name: vllm\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KVPROOF_VLLM_WHEELS", str(wheels))
    tree, label = fetch.resolve("9.9.9")
    assert label == "9.9.9" and tree == fetch.cache_root() / "9.9.9"
    assert (tree / fetch.MARKER).is_file() and not (tree / "vllm" / "_C.abi3.so").exists()
    assert fetch.resolve(str(tree))[0] == tree.resolve()  # the unpacked tree as a PATH
