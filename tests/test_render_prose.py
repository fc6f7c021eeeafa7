"""`render_tutorials.sh --prose`: a text-only change reaches the stored copy without a run."""

import pathlib
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_hooks"))

import notebook_outputs  # noqa: E402


@pytest.fixture
def tutorial(tmp_path, monkeypatch):
    """A committed notebook and its stored, executed copy (an output the code printed)."""
    monkeypatch.setattr(notebook_outputs, "RENDERED", tmp_path / "rendered")
    source = tmp_path / "01_example.ipynb"
    notebook = new_notebook(cells=[new_markdown_cell("It prints 1."), new_code_cell("print(1)")])
    nbformat.write(notebook, source)
    executed = nbformat.read(source, as_version=4)
    executed.cells[1].outputs = [new_output("stream", name="stdout", text="1\n")]
    notebook_outputs.store(executed, source)
    assert notebook_outputs.stale_reason(source) is None
    return source, notebook


def test_a_text_change_is_copied_and_the_outputs_kept(tutorial):
    source, notebook = tutorial
    notebook.cells[0].source = "It prints the number 1."
    nbformat.write(notebook, source)
    assert "source_sha256" in notebook_outputs.stale_reason(source)
    stored = nbformat.read(notebook_outputs.update_prose(source), as_version=4)
    assert notebook_outputs.stale_reason(source) is None
    assert stored.cells[0].source == "It prints the number 1."
    assert stored.cells[1].outputs[0]["text"] == "1\n"


@pytest.mark.parametrize(
    "change",
    [
        lambda cells: cells[1].update(source="print(2)"),  # code: the output would be stale
        lambda cells: cells.append(new_markdown_cell("More.")),  # cells no longer line up
    ],
)
def test_a_code_or_layout_change_is_refused(tutorial, change):
    source, notebook = tutorial
    change(notebook.cells)
    nbformat.write(notebook, source)
    with pytest.raises(SystemExit, match="render"):
        notebook_outputs.update_prose(source)
