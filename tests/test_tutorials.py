"""The tutorial notebooks, and the documentation site that shows them.

In this order, in one file because the site needs the executed notebooks and
pytest-xdist (`--dist loadfile`) runs one file on one worker, top to bottom:

1. The committed notebooks: numbered, stored without outputs, following the
   tutorial pattern.
2. Each notebook runs top to bottom, once: nbclient, a fresh kernel running this
   interpreter, `KERAS_TRANSFORMER_FAST=1` (the notebooks shrink data, models
   and epochs). A failing cell, including a failing `assert`, fails the test, and
   so does a log line or a Python warning in any output (the pages must be
   clean). All notebooks share one working directory, in order: notebook 11
   reuses the run directory notebook 08 trained (each also trains it when run
   alone).
3. The stored full-size copies the site shows (`docs/_rendered/tutorials/`,
   written by `bash scripts/render_tutorials.sh`): each one ran the committed
   notebook (same code cells, same hash, `fast: false`) and is clean.
   The site is built once with `mkdocs build --strict`, rendering those copies;
   the build never executes a notebook.
4. The built HTML: every tutorial in the navigation under its whole title, the
   plots, the concepts page's figures, the API reference, the command-line help,
   and nothing loaded from another host.
5. The site served on 127.0.0.1 and rendered by headless Chromium (Debian's
   `chromium`; `scripts/test.sh` installs it): every math span of every tutorial
   and of the concepts page is rendered math, no raw TeX is visible, and every
   file a page asked for was there. Screenshots of tutorial 03 and of the
   concepts page are left in `build/docs-screenshots/` for a person to look at.
"""

from __future__ import annotations

import html
import inspect
import os
import pathlib
import re
import subprocess
import sys
import time

import nbformat
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
API_PAGES = ("layers", "models", "data", "training", "inference", "export", "analysis")
SCREENSHOTS = ROOT / "build" / "docs-screenshots"
MIN_TUTORIAL_IMAGES = 24

sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
sys.path.insert(0, str(ROOT / "tests"))

import docs_browser  # noqa: E402
import notebook_outputs  # noqa: E402


def _ids(paths):
    return [path.stem for path in paths]


def _page(site, notebook):
    return site / "tutorials" / notebook.stem / "index.html"


# 1. The committed notebooks.


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


# 2. Each notebook runs once, in the fast mode, and prints nothing noisy.

# What must not reach a page: TensorFlow / absl / oneDNN / CUDA log lines, Python warnings,
# tf.function retracing messages.
NOISE = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d|^WARNING: All log messages before absl|oneDNN custom operations"
    r"|cuda drivers|cuInit|\b\w*Warning: |^WARNING:|^INFO:(tensorflow|absl):|retracing",
    re.M,
)


def _noise(notebook) -> list[str]:
    """The noisy lines of an executed notebook's outputs: (cell index, line)."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")]
            texts += [output.get("data", {}).get("text/plain", "")]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else text
                found += [
                    f"cell {index}: {line}" for line in text.splitlines() if NOISE.search(line)
                ]
    return found


def test_noise_pattern_catches_what_the_pages_showed():
    lines = [
        "I0000 00:00:1795639490.361043   31902 port.cc:153] oneDNN custom operations are on.",
        "E0000 00:00:1795639490.3 31902 cuda_executor.cc:1228] failed call to cuInit",
        "/x/keras/src/ops/nn.py:960: UserWarning: You are using a softmax over axis -1",
        "WARNING:tensorflow:5 out of the last 5 calls to <function f> triggered tf.function retracing.",
        "INFO:tensorflow:Assets written to: runs/exports/translator/1/assets",
    ]
    for line in lines:
        assert NOISE.search(line), line
    for line in ["loss 0.25, exact match 0.997", "Warnings are printed by Python"]:
        assert not NOISE.search(line), line


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """(kernel name, the notebooks' shared working directory), FAST switch set."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDA_VISIBLE_DEVICES", "")  # the same CPU run wherever the suite runs
        with notebook_outputs.kernel(tmp_path_factory.mktemp("jupyter"), fast=True) as name:
            yield name, tmp_path_factory.mktemp("tutorial_runs")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs(path, kernel):
    name, workdir = kernel
    start = time.perf_counter()
    # Raises CellExecutionError, with the cell and traceback, on failure.
    notebook = notebook_outputs.execute(path, name, workdir)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")
    assert all(
        output.get("output_type") != "error"
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    noise = _noise(notebook)
    assert not noise, f"{path.name} prints log lines or warnings: {noise[:5]}"


# 3. The stored full-size copies the site shows.

RENDERED = [path for path in NOTEBOOKS if notebook_outputs.rendered_copy(path) is not None]
NOT_RENDERED = [path for path in NOTEBOOKS if path not in RENDERED]


@pytest.mark.parametrize("path", RENDERED, ids=_ids(RENDERED))
def test_stored_copy_ran_the_committed_notebook(path):
    reason = notebook_outputs.stale_reason(path)
    assert reason is None, (
        f"{reason}: re-render it with 'bash scripts/render_tutorials.sh --only {path.name[:2]}'"
    )
    copy = nbformat.read(notebook_outputs.rendered_copy(path), as_version=4)
    assert copy.metadata["keras_transformer"]["fast"] is False
    noise = _noise(copy)
    assert not noise, f"the stored copy of {path.name} shows log lines or warnings: {noise[:5]}"
    # A stderr stream is drawn as a red box on the page (issue 37: tutorial 07's truncation
    # warning); print what a reader should see, or collect the log records and print them.
    boxes = [
        f"cell {index}: {output.text.strip()[:80]}"
        for index, cell in enumerate(copy.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stderr"
    ]
    assert not boxes, f"the stored copy of {path.name} shows stderr boxes: {boxes[:3]}"


def test_every_tutorial_has_a_stored_full_size_copy():
    missing = [path.name for path in NOT_RENDERED]
    assert not missing, f"no stored copy of {missing}: run 'bash scripts/render_tutorials.sh'"


def test_stale_copy_is_detected(tmp_path, monkeypatch):
    """A stored copy whose code differs from its tutorial's is refused (the check can fail)."""
    source = NOTEBOOKS[0]
    notebook = nbformat.read(source, as_version=4)
    monkeypatch.setattr(notebook_outputs, "RENDERED", tmp_path)
    notebook_outputs.store(notebook, source)
    assert notebook_outputs.stale_reason(source) is None
    copy = nbformat.read(tmp_path / source.name, as_version=4)
    code = next(cell for cell in copy.cells if cell.cell_type == "code")
    code.source += "\nprint('edited')"
    nbformat.write(copy, tmp_path / source.name)
    assert "code cells differ" in notebook_outputs.stale_reason(source)
    copy.metadata["keras_transformer"]["fast"] = True
    nbformat.write(copy, tmp_path / source.name)
    assert "KERAS_TRANSFORMER_FAST" in notebook_outputs.stale_reason(source)


# 3. The site, built once from the executed copies.


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
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-5000:] + completed.stderr[-10000:]
    return site_dir


def test_strict_build_succeeds(site):
    assert (site / "index.html").is_file()


# 4. The built HTML.


def _whole_title(notebook):
    heading = nbformat.read(notebook, as_version=4).cells[0].source.splitlines()[0]
    return re.sub(r"[`*]", "", heading[2:]).strip()


def _text(page_html):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page_html)).split())


def test_every_tutorial_is_in_the_nav_under_its_whole_title(site):
    config = (ROOT / "mkdocs.yml").read_text()
    nav = _text((site / "index.html").read_text(encoding="utf-8"))
    for notebook in NOTEBOOKS:
        assert f"tutorials/{notebook.name}" in config, f"{notebook.name} is missing from the nav"
        assert _page(site, notebook).is_file(), _page(site, notebook)
        title = _whole_title(notebook)
        assert title in nav, f"the navigation does not show {title!r} whole"


def test_tutorial_contents_are_whole_and_link_to_their_headings(site):
    """The table of contents of a notebook page: every heading, whole, each link working."""
    for notebook in NOTEBOOKS:
        page = _page(site, notebook).read_text(encoding="utf-8")
        ids = set(re.findall(r'\bid="([^"]+)"', page))
        links = re.findall(r'<a href="#([^"]+)" class="md-nav__link">(.*?)</a>', page, flags=re.S)
        assert links, f"{notebook.name}: no table of contents"
        broken = [anchor for anchor, _ in links if anchor not in ids]
        assert not broken, f"{notebook.name}: contents link to missing headings {broken}"
        headings = nbformat.read(notebook, as_version=4).cells
        for cell in headings:
            for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
                if re.match(r"#{2,3} ", line):
                    title = re.sub(r"[`*]", "", line.lstrip("#")).strip()
                    entries = [_text(text) for _, text in links]
                    assert title in entries, f"{notebook.name}: {title!r} not whole in {entries}"


def test_every_rendered_tutorial_page_shows_its_plots(site):
    """The pages of the tutorials with a stored copy show its figures; the others none yet."""
    counts = {
        notebook.stem: _page(site, notebook).read_text(encoding="utf-8").count("<img")
        for notebook in RENDERED
    }
    bare = [stem for stem, count in counts.items() if count == 0]
    assert not bare, f"tutorial pages without a figure: {bare}; counts {counts}"
    if len(RENDERED) == len(NOTEBOOKS):
        assert sum(counts.values()) >= MIN_TUTORIAL_IMAGES, counts


def test_exercise_solutions_are_folded(site):
    """Every cell tagged `exercise` sits, closed, in a <details> labelled as the solution."""
    for notebook in NOTEBOOKS:
        cells = nbformat.read(notebook, as_version=4).cells
        tagged = sum("exercise" in cell.metadata.get("tags", []) for cell in cells)
        page = _page(site, notebook).read_text(encoding="utf-8")
        folded = re.findall(
            r'<details class="kt-solution"><summary>Solution[^<]*</summary>\s*'
            r'<div class="jp-Cell [^"]*celltag_exercise',
            page,
        )
        assert len(folded) == tagged, f"{notebook.name}: {len(folded)} folded of {tagged}"
        assert page.count('<details class="kt-solution">') == tagged, notebook.name
        # Every cell div tagged `exercise` (mkdocs-jupyter nests two) sits inside a fold.
        unfolded = re.sub(r"<details.*?</details>", "", page, flags=re.S)
        assert "celltag_exercise" not in unfolded, f"{notebook.name}: a solution is not folded"
        assert "<details open" not in page


def test_pages_show_no_log_lines_or_warnings(site):
    for notebook in NOTEBOOKS:
        text = html.unescape(re.sub(r"<[^>]+>", "\n", _page(site, notebook).read_text("utf-8")))
        noise = [line for line in text.splitlines() if NOISE.search(line)]
        assert not noise, f"{notebook.name}: {noise[:5]}"


def test_home_and_tutorials_index_say_how_to_get_the_exercises(site):
    for page in ("index.html", "tutorials/index.html"):
        text = _text((site / page).read_text(encoding="utf-8"))
        assert "keras-transformer exercises --out" in text, page
    assert "keras-transformer exercises --out" in (ROOT / "README.md").read_text()


def test_concepts_page_shows_its_figures(site):
    page = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    for name in ("encoder_decoder.svg", "attention_masks.svg", "attention_weights.svg"):
        assert f'src="../figures/{name}"' in page, name
        figure = (site / "figures" / name).read_text(encoding="utf-8")
        assert figure.lstrip().startswith("<?xml") and "<svg" in figure, name


def test_api_reference_documents_the_public_names(site):
    import keras_transformer

    pages = {
        name: (site / "api" / name / "index.html").read_text(encoding="utf-8") for name in API_PAGES
    }
    every_page = "\n".join(
        path.read_text(encoding="utf-8") for path in sorted((site / "api").glob("*/index.html"))
    )
    for name in API_PAGES:
        page = pages[name]
        subpackage = getattr(keras_transformer, name)
        public = [n for n in getattr(subpackage, "__all__", []) if not n.startswith("_")]
        assert public, name
        for member in public:
            value = getattr(subpackage, member)
            # A submodule re-exported under another name is documented under its own.
            path = (
                value.__name__ if inspect.ismodule(value) else f"keras_transformer.{name}.{member}"
            )
            where = every_page if inspect.ismodule(value) else page  # a module: on its own page
            assert f'id="{path}"' in where, f"{name}.{member} undocumented (no id {path!r})"


def test_api_formulas_are_math(site):
    page = (site / "api" / "layers" / "index.html").read_text(encoding="utf-8")
    assert page.count('class="arithmatex"') >= 5
    assert "softmax(Q K^T" not in page


def test_cli_page_shows_every_command_help(site):
    from keras_transformer import cli

    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "cli-help:" not in page
    for command in cli.COMMANDS:
        assert re.search(rf"usage: keras-transformer {command}\b", page), command


def test_site_loads_nothing_from_another_host(site):
    """Scripts, styles and fonts come from the site itself (MathJax included)."""
    external = re.compile(
        r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I
    )
    for page in sorted(site.rglob("*.html")):
        found = external.findall(page.read_text(encoding="utf-8"))
        assert not found, f"{page.relative_to(site)} loads {found[:3]}"
    assert (site / "assets" / "mathjax" / "tex-chtml-full.js").is_file()
    assert list((site / "assets" / "mathjax").rglob("*.woff")), "MathJax fonts not published"


# 5. In a browser.


def _math_spans(markdown: str) -> int:
    """How many $$...$$ and $...$ formulas a notebook's markdown holds (code spans aside)."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    markdown = re.sub(r"`[^`\n]*`", " ", markdown)
    display = len(re.findall(r"\$\$.+?\$\$", markdown, flags=re.S))
    markdown = re.sub(r"\$\$.+?\$\$", " ", markdown, flags=re.S)
    inline = len(re.findall(r"(?<![\\$])\$(?=\S)[^$\n]+?(?<=\S)\$", markdown))
    return display + inline


def _expected_math(site, url):
    if url.startswith("tutorials/"):
        notebook = TUTORIALS / f"{url.split('/')[1]}.ipynb"
        cells = nbformat.read(notebook, as_version=4).cells
        return _math_spans("\n\n".join(c.source for c in cells if c.cell_type == "markdown"))
    return (site / url / "index.html").read_text(encoding="utf-8").count('class="arithmatex"')


@pytest.fixture(scope="module")
def served(site):
    if docs_browser.chromium() is None:
        pytest.fail(
            "Chromium is needed to check the rendered site: 'apt-get install -y chromium' "
            "(scripts/test.sh installs it when missing)"
        )
    with docs_browser.serve(site) as (base, requests):
        yield base, requests


def test_math_span_counter():
    assert _math_spans(r"$a$ and $$b$$, `$c$`, a \$5 bill and $ 3 $ apples; $x_1$") == 3


PAGES = [f"tutorials/{notebook.stem}/" for notebook in NOTEBOOKS] + ["concepts/", "api/layers/"]


@pytest.mark.parametrize("url", PAGES)
def test_math_is_rendered_in_the_browser(url, site, served):
    base, requests = served
    before = len(requests)
    dom = docs_browser.rendered_dom(base + url)
    text, tags = docs_browser.read_dom(dom)
    expected = _expected_math(site, url)
    if url.startswith(("tutorials/03_", "tutorials/10_", "concepts/", "api/layers/")):
        assert expected > 0, f"{url}: no math found in the source"
    rendered = tags.get("mjx-container", 0)
    assert rendered >= expected, f"{url}: {rendered} rendered formulas for {expected} in the source"
    assert not tags.get("mjx-merror"), f"{url}: MathJax could not typeset a formula"
    raw = docs_browser.raw_tex(text)
    assert not raw, f"{url}: raw TeX visible: {raw[:5]}"
    missing = [(status, path) for status, path in requests[before:] if status >= 400]
    assert not missing, f"{url}: the page asked for missing files: {missing}"


@pytest.mark.parametrize(
    "url, name",
    [
        ("tutorials/03_multi_head_causal_cross_attention/", "tutorial_03.png"),
        ("concepts/", "concepts.png"),
    ],
)
def test_screenshot_for_a_person_to_look_at(url, name, served):
    import matplotlib.image

    base, _ = served
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    path.unlink(missing_ok=True)
    docs_browser.screenshot(base + url, path)
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000, pixels.shape
    assert np.std(pixels[..., :3]) > 0.05, "the screenshot is blank"
