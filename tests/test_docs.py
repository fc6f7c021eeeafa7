"""The documentation site builds with `mkdocs build --strict` (no warnings).

The build renders the pages in `docs/`, the API reference from the docstrings
(mkdocstrings), the tutorial notebooks (mkdocs-jupyter, not executed) and the
command-line help (generated from the parser by `docs/_hooks/mkdocs_hooks.py`).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.ipynb"))
API_PAGES = ("layers", "models", "data", "training", "inference", "export", "analysis")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site_dir = tmp_path_factory.mktemp("site")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "NO_MKDOCS_2_WARNING": "1"}
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-5000:] + completed.stderr[-10000:]
    return site_dir


def test_strict_build_succeeds(site):
    assert (site / "index.html").is_file()


def test_every_tutorial_is_in_the_nav_and_rendered(site):
    config = (ROOT / "mkdocs.yml").read_text()
    for notebook in NOTEBOOKS:
        assert f"tutorials/{notebook.name}" in config, f"{notebook.name} is missing from the nav"
        page = site / "tutorials" / notebook.stem / "index.html"
        assert page.is_file(), page
        title = notebook.stem[:2] + " ·"
        assert title in page.read_text(encoding="utf-8")


def test_api_reference_documents_the_public_names(site):
    import keras_transformer

    for name in API_PAGES:
        html = (site / "api" / name / "index.html").read_text(encoding="utf-8")
        subpackage = getattr(keras_transformer, name)
        public = [n for n in getattr(subpackage, "__all__", []) if not n.startswith("_")]
        assert public, name
        for member in public:
            assert f'id="keras_transformer.{name}.{member}"' in html, (
                f"{name}.{member} undocumented"
            )


def test_cli_page_shows_every_command_help(site):
    from keras_transformer import cli

    html = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "cli-help:" not in html
    for command in cli.COMMANDS:
        assert re.search(rf"usage: keras-transformer {command}\b", html), command
