"""Executed copies of the tutorial notebooks, which the documentation site shows.

The notebooks in `tutorials/` are committed without outputs. The site shows them
with their outputs (plots, printed shapes and tensors) from a run with
`KERAS_TRANSFORMER_FAST=1`, the small-size switch of the test suite:

- the notebook test (`tests/test_tutorials.py`) executes every notebook once and
  stores the executed copy in `build/notebooks/tutorials/` (git-ignored), stamped
  with the SHA-256 of the committed notebook it came from;
- the docs build (`docs/_hooks/mkdocs_hooks.py`) renders the stored copy of
  each notebook whose stamp matches the committed file, and executes the others
  first (in one working directory, in order, as the test does), unless
  `KERAS_TRANSFORMER_DOCS_EXECUTE=0`, which renders them without outputs.

`KERAS_TRANSFORMER_NOTEBOOK_CACHE` moves the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
METADATA_KEY = "keras_transformer_docs"
KERNEL_NAME = "keras-transformer-docs"
CELL_TIMEOUT = 600  # seconds
FAST_ENV = {
    "KERAS_TRANSFORMER_FAST": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}

log = logging.getLogger("mkdocs.hooks.notebook_outputs")


def notebooks() -> list[pathlib.Path]:
    """The tutorial notebooks, in course order."""
    return sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))


def cache_dir() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("KERAS_TRANSFORMER_NOTEBOOK_CACHE", ROOT / "build" / "notebooks")
    )


def source_digest(source: pathlib.Path) -> str:
    """SHA-256 of the committed notebook and of the switch it ran under."""
    digest = hashlib.sha256(pathlib.Path(source).read_bytes())
    digest.update(b"\0KERAS_TRANSFORMER_FAST=1")
    return digest.hexdigest()


def copy_path(source: pathlib.Path) -> pathlib.Path:
    """Where the executed copy of `source` is stored: `<cache>/tutorials/<name>`."""
    return cache_dir() / "tutorials" / pathlib.Path(source).name


def current_copy(source: pathlib.Path) -> pathlib.Path | None:
    """The stored executed copy of `source`, or None when missing or stale."""
    copy = copy_path(source)
    if not copy.is_file():
        return None
    try:
        stamp = json.loads(copy.read_text(encoding="utf-8"))["metadata"][METADATA_KEY]
    except (ValueError, KeyError, TypeError):
        return None
    if stamp.get("source_sha256") != source_digest(source):
        return None
    return copy


def store(executed, source: pathlib.Path) -> pathlib.Path:
    """Writes the executed notebook (an nbformat node) as the copy of `source`."""
    import nbformat

    executed.metadata[METADATA_KEY] = {"source_sha256": source_digest(source)}
    target = copy_path(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=target.parent, suffix=".tmp", delete=False
    ) as handle:
        nbformat.write(executed, handle)
    os.replace(handle.name, target)  # atomic: a reader sees the old copy or the new one
    return target


@contextlib.contextmanager
def kernel(jupyter_dir: pathlib.Path):
    """A kernelspec for this interpreter on JUPYTER_PATH, and the FAST switch.

    Nothing is registered with Jupyter outside `jupyter_dir`; the environment is
    restored on exit.
    """
    spec_dir = pathlib.Path(jupyter_dir) / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "keras_transformer docs",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    saved = {name: os.environ.get(name) for name in [*FAST_ENV, "JUPYTER_PATH"]}
    os.environ.update(FAST_ENV)
    os.environ["JUPYTER_PATH"] = str(jupyter_dir)
    try:
        yield KERNEL_NAME
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute(source: pathlib.Path, kernel_name: str, workdir: pathlib.Path):
    """Runs `source` top to bottom in a fresh kernel; returns the executed notebook.

    Raises nbclient's CellExecutionError, naming the cell, when a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return notebook


def execute_missing(sources: list[pathlib.Path]) -> None:
    """Executes, in order and in one working directory, the notebooks with no current copy."""
    missing = [source for source in sources if current_copy(source) is None]
    if not missing:
        return
    log.info(
        "Executing %d notebook(s) with KERAS_TRANSFORMER_FAST=1 for their outputs "
        "(the notebook test stores them in %s; KERAS_TRANSFORMER_DOCS_EXECUTE=0 skips this)",
        len(missing),
        cache_dir(),
    )
    with tempfile.TemporaryDirectory(prefix="keras-transformer-docs-") as scratch:
        scratch = pathlib.Path(scratch)
        workdir = scratch / "work"
        workdir.mkdir()
        with kernel(scratch / "jupyter") as kernel_name:
            for source in missing:
                start = time.perf_counter()
                store(execute(source, kernel_name, workdir), source)
                log.info("Executed %s in %.0f s", source.name, time.perf_counter() - start)
