"""The tutorial notebooks: committed without outputs, and each runs top to bottom.

Every notebook is executed with nbclient in a fresh kernel running this
interpreter (the virtual environment's Python), with `KERAS_TRANSFORMER_FAST=1`,
which the notebooks read to shrink data, models and epochs. A failing cell,
including a failing `assert`, fails the test. The kernel is described by a
kernelspec written to a temporary directory put first on `JUPYTER_PATH`, so
nothing is registered with Jupyter outside the test.

All notebooks run in one shared working directory, in order: notebook 11 then
reuses the run directory notebook 08 trained (each also trains it when run alone).
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
KERNEL_NAME = "keras-transformer-tests"
CELL_TIMEOUT = 600  # seconds; the whole FAST run takes a few minutes


def _ids(paths):
    return [path.stem for path in paths]


def test_notebooks_are_numbered_in_order():
    numbers = [int(path.name[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(1, len(numbers) + 1)), [p.name for p in NOTEBOOKS]
    assert len(numbers) >= 11


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {index} has outputs; strip them"
            assert cell.execution_count is None, f"{path.name} cell {index} has a count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_follows_the_tutorial_pattern(path):
    """A title, the package imported (not re-implemented), the FAST switch, an assert."""
    notebook = nbformat.read(path, as_version=4)
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {path.name[:2]} ·")
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert "import keras_transformer as kt" in code
    assert 'os.environ.get("KERAS_TRANSFORMER_FAST") == "1"' in code
    assert "assert " in code


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory, monkeypatch_module):
    """A kernelspec for this interpreter on JUPYTER_PATH, and the FAST switch."""
    jupyter = tmp_path_factory.mktemp("jupyter")
    spec_dir = jupyter / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "keras_transformer tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch_module.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch_module.setenv("KERAS_TRANSFORMER_FAST", "1")
    monkeypatch_module.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch_module.setenv("CUDA_VISIBLE_DEVICES", "")
    return tmp_path_factory.mktemp("tutorial_runs")  # the notebooks' working directory


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs(path, kernel_env):
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(kernel_env)}},
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")
    assert all(
        output.get("output_type") != "error"
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
