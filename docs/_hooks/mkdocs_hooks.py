"""MkDocs hooks of the documentation site.

- `on_files`, before mkdocs-jupyter turns notebooks into pages:
  - publishes the notebooks of `tutorials/` (outside `docs/`) as pages under
    `tutorials/`, each from its stored full-size copy so that the page shows the
    outputs (`notebook_outputs.py`, `docs/_rendered/tutorials/`); a tutorial with
    no stored copy yet is shown without outputs. No notebook is executed here;
  - publishes MathJax (from the `django-static-mathjax` package, installed with
    the dev extras) under `assets/mathjax/`, so the site renders math offline;
  - publishes the figures of the concepts page under `figures/`, drawn by
    `concept_figures.py`.
- `on_page_markdown`: replaces `<!-- cli-help: NAME -->` with the current
  `keras-transformer NAME --help` text, so the command-line page never drifts
  from the parser.
- `on_page_content`: gives every notebook page its whole first heading as its
  title and a table of contents read from its headings (mkdocs-jupyter drops
  what is in backticks: "Training a translator with"), and folds every
  solution cell of an exercise (cell tag `exercise`) into a `<details>`
  element labelled as the solution, closed: a student tries first.
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
    published = []
    for source in notebook_outputs.notebooks():
        copy = notebook_outputs.rendered_copy(source)
        if copy is None:
            log.info("%s: no stored full-size copy yet, shown without outputs", source.name)
        elif (reason := notebook_outputs.stale_reason(source)) is not None:
            log.warning(
                "%s: shown without outputs: %s; re-render it with "
                "'bash scripts/render_tutorials.sh --only %s'",
                source.name,
                reason,
                source.name[:2],
            )
            copy = None
        # mkdocs-jupyter reads the notebook at src_dir / src_uri.
        src_dir = notebook_outputs.RENDERED.parent if copy else ROOT
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


SOLUTION_CELL = re.compile(r'<div class="jp-Cell [^"]*\bcelltag_exercise\b[^"]*">')
DIV_TAG = re.compile(r"<div\b|</div>")
SOLUTION_SUMMARY = "Solution (open it after trying the exercise)"


def fold_solutions(html: str) -> str:
    """Wraps every cell tagged `exercise` in a closed `<details class="kt-solution">`."""
    pieces, position = [], 0
    for match in SOLUTION_CELL.finditer(html):
        if match.start() < position:  # a cell nested in one already folded (never in nbconvert)
            continue
        depth, end = 0, None
        for tag in DIV_TAG.finditer(html, match.start()):
            depth += 1 if tag.group() == "<div" else -1
            if depth == 0:
                end = tag.end()
                break
        if end is None:
            raise ValueError("an exercise cell's <div> is not closed in the rendered notebook")
        pieces += [
            html[position : match.start()],
            f'<details class="kt-solution"><summary>{SOLUTION_SUMMARY}</summary>\n',
            html[match.start() : end],
            "\n</details>",
        ]
        position = end
    return "".join(pieces) + html[position:]


def on_page_content(html, page, config, files):
    if page.file.src_uri.endswith(".ipynb"):
        title = _first_heading(pathlib.Path(page.file.abs_src_path))
        if title:
            page.title = title
        page.toc = _heading_toc(html)
        html = fold_solutions(html)
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
