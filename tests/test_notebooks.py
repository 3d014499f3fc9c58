"""Execute every teaching notebook in notebooks/ (outputs are stripped in git).

Each notebook asserts its key behaviour (the leak, the proof, the guard...), so a change
that breaks what a notebook teaches fails here. The kernel is this interpreter
(``sys.executable``): a kernelspec written into a temporary ``JUPYTER_PATH`` directory
shadows any global "python3" kernel, so the test works in a fresh venv with no Jupyter
installed elsewhere. Notebooks run with notebooks/ as their working directory.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
kernelspec = pytest.importorskip("ipykernel.kernelspec")

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 180  # per cell; each notebook takes well under a minute in all


def test_notebooks_exist() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01-the-incident.ipynb",
        "02-model-checking.ipynb",
        "03-differential-testing.ipynb",
        "04-paged-attention.ipynb",
        "05-ask-the-release.ipynb",
        "06-ask-vllm.ipynb",
    ]
    readme = (NOTEBOOKS_DIR / "README.md").read_text(encoding="utf-8")
    for name in names:
        assert name in readme


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stripped(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name}: commit notebooks with outputs stripped"
            )


@pytest.fixture
def venv_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A "python3" kernelspec that launches this interpreter, found before any other."""
    kernelspec.write_kernel_spec(tmp_path / "kernels" / "python3")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.argv[0] == sys.executable, spec.argv
    return "python3"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, venv_kernel: str) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=venv_kernel,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
    seconds = time.perf_counter() - start
    print(f"{path.name}: {seconds:.1f} s")
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors
    if path.name in ("02-model-checking.ipynb", "03-differential-testing.ipynb"):
        html = [
            out["data"]["text/html"]
            for cell in nb.cells
            if cell.cell_type == "code"
            for out in cell.outputs
            if "text/html" in out.get("data", {})
        ]
        assert any('class="kvproof-report"' in h for h in html), "the report must show inline"
    if path.name == "04-paged-attention.ipynb":
        pngs = [
            out
            for cell in nb.cells
            if cell.cell_type == "code"
            for out in cell.outputs
            if "image/png" in out.get("data", {})
        ]
        assert len(pngs) >= 2, "the attention and benchmark plots must render inline"
