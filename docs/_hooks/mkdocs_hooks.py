"""MkDocs hooks of the documentation site.

- `on_files`, before mkdocs-jupyter turns notebooks into pages:
  - publishes the notebooks of `tutorials/` (outside `docs/`) as pages under
    `tutorials/`, each from its executed copy so that the page shows the
    outputs (`notebook_outputs.py`: copies stored by the notebook test, the
    missing ones executed here);
  - publishes MathJax (from the `django-static-mathjax` package, installed with
    the dev extras) under `assets/mathjax/`, so the site renders math offline;
  - publishes the figures of the concepts page under `figures/`, drawn by
    `concept_figures.py`.
- `on_page_markdown`: replaces `<!-- cli-help: NAME -->` with the current
  `keras-transformer NAME --help` text, so the command-line page never drifts
  from the parser.
- `on_page_content`: gives every notebook page its whole first heading as its
  title and a table of contents read from its headings (mkdocs-jupyter drops
  what is in backticks: "Training a translator with").
"""

from __future__ import annotations

import html as html_module
import importlib
import importlib.util
import json
import logging
import os
import pathlib
import re
import sys

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.structure.toc import get_toc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import concept_figures  # noqa: E402  (a sibling module, found through the line above)
import notebook_outputs  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI_HELP = re.compile(r"<!-- cli-help: ([a-z]+) -->")
# The MathJax 3 files the site needs: the TeX-to-HTML bundle and its web fonts.
MATHJAX_FILES = ("tex-chtml-full.js", "output/chtml/fonts/woff-v2/*.woff")

log = logging.getLogger("mkdocs.hooks")


def _mathjax_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("mathjax")  # django-static-mathjax; not imported
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        es5 = pathlib.Path(location) / "static" / "mathjax" / "es5"
        if (es5 / MATHJAX_FILES[0]).is_file():
            return es5
    raise PluginError(
        "MathJax is not installed: the docs render math with the files of the "
        "'django-static-mathjax' package; install the dev extras with 'bash scripts/setup.sh' "
        "(or '.venv/bin/pip install -e .[dev]')"
    )


def _notebook_files(config) -> list[File]:
    sources = notebook_outputs.notebooks()
    if os.environ.get("KERAS_TRANSFORMER_DOCS_EXECUTE", "1") != "0":
        notebook_outputs.execute_missing(sources)
    published = []
    for source in sources:
        copy = notebook_outputs.current_copy(source)
        if copy is None:
            log.info("%s: no executed copy, shown without outputs", source.name)
        # mkdocs-jupyter reads the notebook at src_dir / src_uri.
        src_dir = notebook_outputs.cache_dir() if copy else ROOT
        published.append(
            File(
                f"tutorials/{source.name}",
                src_dir=str(src_dir),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return published


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the .ipynb files
def on_files(files, config):
    for file in _notebook_files(config):
        files.append(file)
    mathjax = _mathjax_dir()
    for pattern in MATHJAX_FILES:
        for path in sorted(mathjax.glob(pattern)):
            uri = "assets/mathjax/" + path.relative_to(mathjax).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    for name, content in concept_figures.figures().items():
        files.append(File.generated(config, f"figures/{name}", content=content))
    return files


def _first_heading(notebook: pathlib.Path) -> str | None:
    """The text of the notebook's first `# ` heading, inline markup removed."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            if line.startswith("# "):
                return re.sub(r"[`*]", "", line[2:]).strip()
    return None


HEADING = re.compile(r"<h([1-6])\b[^>]*\bid=\"([^\"]+)\"[^>]*>(.*?)</h\1>", re.S)


def _heading_toc(content: str):
    """The table of contents of a rendered notebook, read from its own headings.

    mkdocs-jupyter derives the table of contents from a separate conversion
    that drops code spans ("2. The same function as" for "... as
    `keras.layers.MultiHeadAttention`") and then links to ids the page does not
    have. Read from the HTML, every entry is whole and links to its heading;
    math stays `$...$`, which MathJax renders in the table of contents too.
    """
    root: list[dict] = []
    stack: list[dict] = []
    for level, anchor, inner in HEADING.findall(content):
        inner = re.sub(r"<a\b[^>]*class=\"anchor-link\"[^>]*>.*?</a>", "", inner, flags=re.S)
        text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", inner)).split())
        token = {
            "level": int(level),
            "id": anchor,
            "name": html_module.escape(text, quote=False),
            "children": [],
        }
        while stack and stack[-1]["level"] >= token["level"]:
            stack.pop()
        (stack[-1]["children"] if stack else root).append(token)
        stack.append(token)
    return get_toc(root)


def on_page_content(html, page, config, files):
    if page.file.src_uri.endswith(".ipynb"):
        title = _first_heading(pathlib.Path(page.file.abs_src_path))
        if title:
            page.title = title
        page.toc = _heading_toc(html)
    return html


def _cli_help() -> dict[str, str]:
    from keras_transformer import cli

    os.environ["COLUMNS"] = "90"  # argparse wraps to the terminal width
    return cli.help_texts()  # the parser users get: defaults, exit statuses


_HELP: dict[str, str] = {}


def on_page_markdown(markdown, page, config, files):
    if "<!-- cli-help:" not in markdown:
        return markdown
    if not _HELP:
        _HELP.update(_cli_help())

    def replace(match):
        name = match.group(1)
        if name not in _HELP:
            raise ValueError(f"{page.file.src_uri}: no command {name!r}; known: {sorted(_HELP)}")
        return "```text\n" + _HELP[name].rstrip() + "\n```"

    return CLI_HELP.sub(replace, markdown)
