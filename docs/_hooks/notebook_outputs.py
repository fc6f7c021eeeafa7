"""Executed copies of the tutorial notebooks: the site shows them, and this renders them.

The notebooks in `tutorials/` are committed without outputs. The site shows each one
with the outputs of a run at its full size (no `KERAS_TRANSFORMER_FAST`), stored in
`docs/_rendered/tutorials/NN_name.ipynb` and committed. A stored copy records, in its
notebook metadata, `{"keras_transformer": {"fast": false, "source_sha256": ...}}`: the
SHA-256 of the committed tutorial it ran. The docs build never executes a notebook; a
tutorial with no stored copy is shown without outputs, and `tests/test_tutorials.py`
fails when a stored copy's code differs from its tutorial's (re-render it).

Render (hours on a 2-core CPU; on a GPU when one is visible):

    bash scripts/render_tutorials.sh            # every tutorial, in order, one working directory
    bash scripts/render_tutorials.sh --only 07  # one tutorial (alone: it trains what it needs)

The kernel runs with `TF_CPP_MIN_LOG_LEVEL=3`, `CUDA_VISIBLE_DEVICES=""` where no GPU
is found, and without ipykernel's capture of the process's file descriptors: what
TensorFlow's C++ runtime writes to stderr before any Python runs (absl, oneDNN, CUDA
probes) stays in the terminal, out of the pages. The test suite runs the notebooks with
the same kernel and `KERAS_TRANSFORMER_FAST=1`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import pathlib
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
RENDERED = ROOT / "docs" / "_rendered" / "tutorials"  # mkdocs reads <parent>/tutorials/NAME
METADATA_KEY = "keras_transformer"
KERNEL_NAME = "keras-transformer-docs"
FAST_CELL_TIMEOUT = 600  # seconds; a full-size cell may train for an hour: no limit then
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}

log = logging.getLogger("mkdocs.hooks.notebook_outputs")


def notebooks() -> list[pathlib.Path]:
    """The tutorial notebooks, in course order."""
    return sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))


def source_digest(source: pathlib.Path) -> str:
    """SHA-256 of the committed tutorial notebook."""
    return hashlib.sha256(pathlib.Path(source).read_bytes()).hexdigest()


def rendered_path(source: pathlib.Path) -> pathlib.Path:
    """Where the full-size copy of `source` is stored: `docs/_rendered/tutorials/<name>`."""
    return RENDERED / pathlib.Path(source).name


def rendered_copy(source: pathlib.Path) -> pathlib.Path | None:
    """The stored full-size copy of `source`, or None when there is none yet."""
    copy = rendered_path(source)
    return copy if copy.is_file() else None


def code_cells(path: pathlib.Path) -> list[str]:
    """The sources of a notebook's code cells, in order."""
    cells = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def stale_reason(source: pathlib.Path) -> str | None:
    """Why the stored copy of `source` does not show it (None: it does, or there is none)."""
    copy = rendered_copy(source)
    if copy is None:
        return None
    try:
        stamp = json.loads(copy.read_text(encoding="utf-8"))["metadata"][METADATA_KEY]
    except (ValueError, KeyError, TypeError):
        return f"{copy} has no {METADATA_KEY!r} metadata"
    if stamp.get("fast") is not False:
        return f"{copy} ran with KERAS_TRANSFORMER_FAST (metadata fast={stamp.get('fast')!r})"
    if code_cells(copy) != code_cells(source):
        return f"{copy}'s code cells differ from {source.name}'s"
    if stamp.get("source_sha256") != source_digest(source):
        return f"{copy} ran another version of {source.name} (source_sha256 differs)"
    return None


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and os.environ.get("CUDA_VISIBLE_DEVICES") != ""


@contextlib.contextmanager
def kernel(jupyter_dir: pathlib.Path, fast: bool = True):
    """A kernelspec for this interpreter on JUPYTER_PATH, with a quiet environment.

    `fast` sets `KERAS_TRANSFORMER_FAST=1` (the test suite's sizes); without it the
    switch is removed. Nothing is registered with Jupyter outside `jupyter_dir`; the
    environment is restored on exit.
    """
    spec_dir = pathlib.Path(jupyter_dir) / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            # TensorFlow's C++ logs go to the process's stderr, not into the notebook.
            "--IPKernelApp.capture_fd_output=False",
        ],
        "display_name": "keras_transformer docs",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    env = dict(QUIET_ENV, JUPYTER_PATH=str(jupyter_dir))
    if fast:
        env["KERAS_TRANSFORMER_FAST"] = "1"
    if not _has_gpu():
        env["CUDA_VISIBLE_DEVICES"] = ""
    saved = {name: os.environ.get(name) for name in [*env, "KERAS_TRANSFORMER_FAST"]}
    os.environ.update(env)
    if not fast:
        os.environ.pop("KERAS_TRANSFORMER_FAST", None)
    try:
        yield KERNEL_NAME
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute(
    source: pathlib.Path, kernel_name: str, workdir: pathlib.Path, timeout=FAST_CELL_TIMEOUT
):
    """Runs `source` top to bottom in a fresh kernel; returns the executed notebook.

    Raises nbclient's CellExecutionError, naming the cell, when a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=timeout,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return notebook


def store(executed, source: pathlib.Path) -> pathlib.Path:
    """Writes a full-size executed notebook (an nbformat node) as the stored copy of `source`."""
    import nbformat

    executed.metadata[METADATA_KEY] = {"fast": False, "source_sha256": source_digest(source)}
    target = rendered_path(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=target.parent, suffix=".tmp", delete=False
    ) as handle:
        nbformat.write(executed, handle)
    os.replace(handle.name, target)  # atomic: a reader sees the old copy or the new one
    return target


def render(
    only: list[str] | None = None, workdir: pathlib.Path | None = None
) -> list[pathlib.Path]:
    """Executes the tutorials at full size, in order, in one working directory; stores each.

    Args:
        only: two-digit numbers ("07") or names of the tutorials to render; all when None.
        workdir: the notebooks' shared working directory (a fresh temporary one when None).

    Returns:
        The stored copies.
    """
    sources = notebooks()
    if only:
        wanted = {name.removesuffix(".ipynb") for name in only}
        chosen = [s for s in sources if s.stem in wanted or s.name[:2] in wanted]
        unknown = sorted(
            w for w in wanted if not any(s.stem == w or s.name[:2] == w for s in sources)
        )
        if unknown:
            raise SystemExit(
                f"render: --only {unknown}: no such tutorial; known: "
                f"{[s.name[:2] for s in sources]}"
            )
        sources = chosen
    stored = []
    with tempfile.TemporaryDirectory(prefix="keras-transformer-render-") as scratch:
        scratch = pathlib.Path(scratch)
        work = pathlib.Path(workdir) if workdir else scratch / "work"
        work.mkdir(parents=True, exist_ok=True)
        with kernel(scratch / "jupyter", fast=False) as kernel_name:
            for source in sources:
                start = time.perf_counter()
                log.warning("rendering %s at full size in %s ...", source.name, work)
                stored.append(store(execute(source, kernel_name, work, timeout=None), source))
                log.warning("%s: %.0f s", source.name, time.perf_counter() - start)
    return stored


def update_prose(source: pathlib.Path) -> pathlib.Path:
    """Copies the markdown of `source` into its stored copy, without running anything: for a
    change of text only. Refused when the code cells differ (the outputs would not be the
    committed code's) or the cells do not line up; then render the tutorial again."""
    import nbformat

    copy = rendered_copy(source)
    if copy is None:
        raise SystemExit(f"render: --prose {source.name}: no stored copy; render it first")
    if code_cells(copy) != code_cells(source):
        raise SystemExit(f"render: --prose {source.name}: its code changed; render it again")
    stored = nbformat.read(copy, as_version=4)
    committed = nbformat.read(source, as_version=4)
    kinds = [c.cell_type for c in committed.cells]
    if [c.cell_type for c in stored.cells] != kinds:
        raise SystemExit(f"render: --prose {source.name}: cells added or removed; render it")
    for old, new in zip(stored.cells, committed.cells, strict=True):
        if new.cell_type == "markdown":
            old.source = new.source
    return store(stored, source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="render_tutorials",
        description="Execute the tutorials at full size and store the copies the site shows "
        f"({RENDERED.relative_to(ROOT)}).",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NN",
        help="render only this tutorial (two-digit number or name); repeatable",
    )
    parser.add_argument(
        "--workdir",
        type=pathlib.Path,
        help="the notebooks' working directory (default: a temporary one)",
    )
    parser.add_argument(
        "--prose",
        action="store_true",
        help="with --only: copy the notebook's text into its stored copy, running nothing "
        "(refused if its code changed)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.prose:
        if not args.only:
            parser.error("--prose needs --only NN")
        wanted = {name.removesuffix(".ipynb") for name in args.only}
        for source in notebooks():
            if source.stem in wanted or source.name[:2] in wanted:
                print(update_prose(source).relative_to(ROOT))
        return 0
    for path in render(args.only, args.workdir):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
