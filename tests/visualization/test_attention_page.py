"""`keras-transformer attention`: a self-contained page, rendered in headless Chromium."""

import html
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from keras_transformer import cli
from keras_transformer.visualization import attention_page
from tests import docs_browser

TEXT = "one two three"


@pytest.fixture(scope="module")
def page(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("attention") / "attention.html"
    assert cli.main(["attention", str(tiny_run), TEXT, "--out", str(out)]) == 0
    return out


def test_page_holds_every_kind_layer_and_head(page, tiny_run):
    found = attention_page.translation_attention(tiny_run, TEXT)
    assert sorted(found["kinds"]) == sorted(attention_page.KINDS)
    for kind in found["kinds"].values():
        layers = np.asarray(kind["layers"])  # (layers, heads, q, k)
        assert layers.shape[:2] == (2, 2)
        np.testing.assert_allclose(layers.sum(-1), 1.0, atol=1e-3)  # softmax rows
    assert found["source"][0] == "[START]" and found["target"][0] == "[START]"
    text = page.read_text(encoding="utf-8")
    for token in found["source"] + found["target"]:
        assert f'<span class="tok">{html.escape(token)}</span>' in text, token


def test_page_loads_nothing_from_the_network(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", text, re.I)
    assert "http://" not in text and "https://" not in text
    assert "<script src" not in text and "<link" not in text


def _dom(page, fragment=""):
    if docs_browser.chromium() is None:
        pytest.fail("Chromium is needed: 'apt-get install -y chromium'")
    return docs_browser.rendered_dom(page.as_uri() + fragment)


def test_chromium_renders_tokens_and_the_chosen_head(page, tiny_run):
    found = attention_page.translation_attention(tiny_run, TEXT)
    head0 = _dom(page, "#kind=cross&layer=1&head=0")
    head1 = _dom(page, "#kind=cross&layer=1&head=1")
    assert 'data-kind="cross"' in head0 and 'data-head="0"' in head0 and 'data-layer="1"' in head0
    assert 'data-head="1"' in head1
    text = html.unescape(re.sub(r"<[^>]+>", " ", head0))
    for token in found["source"] + found["target"]:
        assert token in text, token
    shown = [re.search(r'data-weights="([^"]*)"', dom).group(1) for dom in (head0, head1)]
    expected = [np.asarray(found["kinds"]["cross"]["layers"][1][h]) for h in (0, 1)]
    for weights, grid in zip(expected, shown, strict=True):
        rows = np.array([[float(v) for v in row.split(",")] for row in grid.split(";")])
        np.testing.assert_allclose(rows, weights, atol=2e-3)
    assert shown[0] != shown[1]  # switching the head changes what is shown


def test_rows_are_labelled_with_the_token_predicted_there(tiny_run):
    """Row i of the decoder's attention is the position whose logits pick output token i.

    Independent of the page: the model itself, fed the page's decoder inputs, predicts at
    position i exactly the token the page writes on row i (labelling rows with the inputs
    would put every label one position early).
    """
    from keras_transformer import data
    from keras_transformer.inference import Translator

    found = attention_page.translation_attention(tiny_run, TEXT)
    translator = Translator.from_run_dir(tiny_run)
    target = translator.target_tokenizer
    assert found["target"][0] == "[START]" and found["target"][1:] == found["output"][:-1]
    source_ids = np.asarray(
        data.encode_source([TEXT], translator.source_tokenizer, translator.max_length)
    )
    source_ids = source_ids[:, : int(np.count_nonzero(source_ids))]
    generated = [int(t) for t in translator.translate_tokens([TEXT])[0] if t != 0]
    inputs = np.array([[target.start_id, *generated[:-1]]], "int32")
    logits = translator.model({"source": source_ids, "target": inputs}, training=False)
    predicted = np.asarray(logits)[0, :, 1:].argmax(-1) + 1  # never [PAD] (id 0), as the search
    names = [t.decode() for t in target.lookup(predicted[None]).numpy()[0]]
    assert names == found["output"], (names, found["output"])
    for kind in ("cross", "decoder self"):
        assert found["kinds"][kind]["queries"] == "output"
    assert found["kinds"]["decoder self"]["keys"] == "target"
    assert found["kinds"]["cross"]["keys"] == "source"


def test_decoder_kinds_need_the_output_tokens():
    with pytest.raises(ValueError, match="needs output_tokens"):
        attention_page.attention_data(["a"], ["[START]", "x"], {"cross": [np.ones((1, 2, 1))]})


def test_encoder_only_data_has_one_kind():
    data = attention_page.attention_data(["a", "b"], [], {"encoder self": [np.eye(2)[None]]})
    assert list(data["kinds"]) == ["encoder self"]
    with pytest.raises(ValueError, match=r"cross layer 0: weights of shape \(1, 2, 2\)"):
        attention_page.attention_data(
            ["a", "b"], ["x"], {"cross": [np.eye(2)[None]]}, output_tokens=["y"]
        )


def test_command_is_listed_in_the_help():
    completed = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "attention", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "--out" in completed.stdout


def test_translator_gives_the_same_page_as_its_run(tiny_run):
    from keras_transformer.inference import Translator

    translator = Translator.from_run_dir(tiny_run)
    assert attention_page.explorer_page(translator, TEXT) == attention_page.explorer_page(
        str(tiny_run), TEXT
    )


@pytest.fixture(scope="module")
def encoder_run(tmp_path_factory):
    """A pre-training run directory: a masked language model and its tokenizer."""
    import json

    from keras_transformer import data, models

    run_dir = tmp_path_factory.mktemp("mlm_run")
    tokenizer = data.WordPieceTokenizer.learn(["the cat sat", "the dog ran", "a cat ran"], 40)
    tokenizer.save(run_dir / "tokenizers" / "source")
    model = models.build_masked_language_model(
        tokenizer.vocab_size, num_layers=2, d_model=8, num_heads=2, dff=16, max_length=12
    )
    model.save(run_dir / "model.keras")
    (run_dir / "config.json").write_text(json.dumps({"objective": "masked-lm"}))
    return run_dir, model, tokenizer


def test_encoder_run_gives_encoder_self_attention_only(encoder_run, tmp_path):
    import keras

    run_dir, model, tokenizer = encoder_run
    out = tmp_path / "encoder.html"
    assert cli.main(["attention", str(run_dir), "the cat ran", "--out", str(out)]) == 0
    found = attention_page.run_attention(run_dir, "the cat ran")
    assert list(found["kinds"]) == ["encoder self"] and found["target"] == []
    pieces = [t.removeprefix("##") for t in found["source"][1:-1]]
    assert found["source"][0] == "[START]" and found["source"][-1] == "[END]"
    assert "".join(pieces) == "thecatran", found["source"]
    # Independent value: the MLM's own first layer, called on its own embeddings.
    ids = np.array(
        [[tokenizer.start_id, *tokenizer.tokenize(["the cat ran"]).to_list()[0], tokenizer.end_id]]
    )
    x = model.get_layer("encoder_embedding")(ids)
    _, weights = model.get_layer("encoder_layer_0")(
        x, padding_mask=keras.ops.ones(ids.shape, "bool"), return_attention_scores=True
    )
    np.testing.assert_allclose(
        found["kinds"]["encoder self"]["layers"][0], np.asarray(weights)[0], atol=1e-3
    )
    assert len(found["kinds"]["encoder self"]["layers"]) == 2
    text = out.read_text(encoding="utf-8")
    assert "Encoder self-attention" in text
    for token in found["source"]:
        assert f'<span class="tok">{html.escape(token)}</span>' in text, token


def test_encoder_model_needs_its_tokenizer_and_encoder_layers(encoder_run):
    from keras_transformer import models

    _, model, tokenizer = encoder_run
    with pytest.raises(ValueError, match="tokenizer=its tokenizer"):
        attention_page.explorer_page(model, "the cat")
    decoder = models.build_language_model(30, num_layers=1, d_model=8, num_heads=2, dff=16)
    with pytest.raises(ValueError, match="has no encoder_embedding"):
        attention_page.encoder_attention(decoder, tokenizer, "the cat")


def test_inline_frame_holds_the_page_exactly(page):
    text = page.read_text(encoding="utf-8")
    frame = attention_page.inline_frame(text, height=300)
    srcdoc = re.fullmatch(r'<div[^>]*><iframe srcdoc="([^"]*)"[^>]*></iframe></div>', frame).group(
        1
    )
    assert html.unescape(srcdoc) == text
    assert "<script" not in srcdoc  # escaped: nothing of the page runs in the outer document
    with pytest.raises(ValueError, match="height=0"):
        attention_page.inline_frame(text, height=0)
    with pytest.raises(TypeError, match="height=True"):
        attention_page.inline_frame(text, height=True)


def test_chromium_runs_the_page_inside_the_inline_frame(page, tmp_path):
    """The notebooks embed the page in an iframe srcdoc: its script draws the grid there too."""
    if docs_browser.chromium() is None:
        pytest.fail("Chromium is needed: 'apt-get install -y chromium'")
    outer = tmp_path / "outer.html"
    frame = attention_page.inline_frame(page.read_text(encoding="utf-8"))
    copy = """<script>
    const frame = document.querySelector("iframe");
    frame.addEventListener("load", () => {
      const inner = frame.contentDocument;
      document.body.dataset.frameWeights = inner.body.dataset.weights || "none";
      document.body.dataset.frameCells = inner.querySelectorAll("#grid td").length;
    });
    </script>"""
    outer.write_text(f"<!DOCTYPE html><html><body>{frame}{copy}</body></html>", encoding="utf-8")
    dom = docs_browser.rendered_dom(outer.as_uri())
    weights = re.search(r'data-frame-weights="([^"]*)"', dom)
    assert weights and weights.group(1) not in ("", "none"), dom[-2000:]
    assert int(re.search(r'data-frame-cells="(\d+)"', dom).group(1)) > 0


# ------------------------------------------------------------------ the page as a student uses it

# The width of the notebook output's iframe on the built site (tutorial 07 at a 1280-px window,
# mkdocs-material with both sidebars): 586 px, measured with getBoundingClientRect in Chromium.
SITE_FRAME_WIDTH = 586
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[2] / "build" / "docs-screenshots"

SOURCE = ["[START]", "My", "father", "bought", "me", "a", "new", "bicycle", ".", "[END]"]
OUTPUT = ["Mi", "padre", "me", "compró", "una", "bicicleta", "nueva", ".", "[END]"]
ALIGNED = [1, 2, 4, 3, 5, 7, 6, 8, 9]  # the source position each output token reads most


def _spanish_data():
    """Attention of a made-up two-layer model: distinct weights, each row a distribution."""
    rng = np.random.default_rng(0)

    def rows(shape, causal=False, aligned=None):
        w = rng.random(shape) + 0.05
        if aligned is not None:
            w[:, np.arange(shape[1]), aligned] += 3.0
        if causal:
            w = w * np.tril(np.ones(shape[1:]))
        return w / w.sum(-1, keepdims=True)

    n_src, n_tgt = len(SOURCE), len(OUTPUT)
    weights = {
        "encoder self": [rows((2, n_src, n_src)) for _ in range(2)],
        "decoder self": [rows((2, n_tgt, n_tgt), causal=True) for _ in range(2)],
        "cross": [rows((2, n_tgt, n_src), aligned=ALIGNED) for _ in range(2)],
    }
    target = ["[START]", *OUTPUT[:-1]]
    return attention_page.attention_data(SOURCE, target, weights, output_tokens=OUTPUT)


# Runs in the outer page once the iframe has loaded: plays a student's hovers inside the frame
# and writes what the frame shows into data-results (JSON) of the outer body.
_STUDENT = """<script>
const frame = document.querySelector("iframe");
frame.addEventListener("load", () => {
  const d = frame.contentDocument, results = {};
  const tok = (side, i) => d.querySelector(`.tok[data-side="${side}"][data-index="${i}"]`);
  const hover = el => el.dispatchEvent(new MouseEvent("mouseenter"));
  const weights = side => [...d.querySelectorAll(`.tok[data-side="${side}"]`)].map(
    t => t.dataset.weight === undefined ? null : Number(t.dataset.weight));
  const visible = () => ["source", "target", "output"].filter(s => !d.getElementById(s + "-tokens").hidden);
  const grid = () => ({
    rows: [...d.querySelectorAll("#grid tbody th")].map(t => t.textContent),
    columns: [...d.querySelectorAll("#grid thead th")].slice(1).map(t => t.textContent),
  });
  const state = () => ({kind: d.body.dataset.kind, layer: d.body.dataset.layer,
                        head: d.body.dataset.head, visible: visible(), ...grid()});
  const choose = kind => { const s = d.getElementById("kind"); s.value = kind;
                           s.dispatchEvent(new Event("change")); };
  results.opened = state();
  hover(tok("source", %(source)d));
  results.cross_source = {output: weights("output"), source: weights("source"),
                          highlight: d.body.dataset.highlight};
  hover(tok("output", %(output)d));
  results.cross_output = {source: weights("source"), output: weights("output")};
  choose("encoder self");
  results.encoder = state();
  hover(tok("source", %(source)d));
  results.encoder_source = {source: weights("source"),
                            selected: d.querySelector(".tok.selected").dataset.index};
  hover(d.querySelector(`#grid thead th[data-key="%(source)d"]`));
  results.encoder_column = {source: weights("source"), highlight: d.body.dataset.highlight};
  choose("decoder self");
  results.decoder = state();
  hover(tok("output", %(output)d));
  results.decoder_output = {target: weights("target")};
  choose("cross");
  hover(tok("source", %(source)d));  // the state a screenshot shows
  const root = d.documentElement;
  results.layout = {frame_width: frame.clientWidth, frame_height: frame.clientHeight,
                    page_width: root.scrollWidth, page_height: root.scrollHeight,
                    view_width: frame.contentWindow.innerWidth};
  document.body.dataset.results = JSON.stringify(results);
});
</script>"""


def _in_frame(page_html, path, width, source, output):
    """Writes an outer page holding `page_html` in `inline_frame` at `width` px; returns its URL."""
    frame = attention_page.inline_frame(page_html, height=300)
    script = _STUDENT % {"source": source, "output": output}
    path.write_text(
        f'<!DOCTYPE html><html><body style="margin: 0"><div style="width: {width}px">{frame}'
        f"</div>{script}</body></html>",
        encoding="utf-8",
    )
    return path.as_uri()


def _results(url):
    import json

    if docs_browser.chromium() is None:
        pytest.fail("Chromium is needed: 'apt-get install -y chromium'")
    dom = docs_browser.rendered_dom(url)
    found = re.search(r'data-results="([^"]*)"', dom)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.parametrize("width", [SITE_FRAME_WIDTH, 380])
def test_student_hovers_inside_the_site_frame(width, tmp_path):
    data = _spanish_data()
    page = attention_page.render_page(data, "Attention: 'My father bought me a new bicycle.'")
    source, output = 6, 6  # "new" and "nueva"
    results = _results(_in_frame(page, tmp_path / "outer.html", width, source, output))
    cross = np.asarray(data["kinds"]["cross"]["layers"][1][0])  # last layer, head 0
    encoder = np.asarray(data["kinds"]["encoder self"]["layers"][1][0])
    decoder = np.asarray(data["kinds"]["decoder self"]["layers"][1][0])

    # Opens on the last layer's cross-attention; rows are the predicted tokens.
    opened = results["opened"]
    assert (opened["kind"], opened["layer"], opened["head"]) == ("cross", "1", "0")
    assert opened["rows"] == OUTPUT and opened["columns"] == SOURCE
    assert opened["visible"] == ["source", "output"]
    # A source token in cross mode: the translation tokens that read it, with their weights.
    shown = results["cross_source"]
    np.testing.assert_allclose(shown["output"], cross[:, source], atol=6e-3)
    assert shown["highlight"] == f"key:{source}"
    assert shown["source"].count(None) == len(SOURCE)  # the source row itself is not painted
    assert int(np.argmax(shown["output"])) == output  # "nueva" is the row that read "new"
    # A translation token: the source tokens it read.
    np.testing.assert_allclose(results["cross_output"]["source"], cross[output], atol=6e-3)
    # Self-attention: the hovered token's weight on itself is shown with the others.
    assert results["encoder"]["rows"] == SOURCE == results["encoder"]["columns"]
    assert results["encoder"]["visible"] == ["source"]
    shown = results["encoder_source"]
    np.testing.assert_allclose(shown["source"], encoder[source], atol=6e-3)
    assert shown["selected"] == str(source) and shown["source"][source] is not None
    # Hovering a column label: the tokens that read it (the other direction).
    np.testing.assert_allclose(results["encoder_column"]["source"], encoder[:, source], atol=6e-3)
    assert results["encoder_column"]["highlight"] == f"key:{source}"
    # Decoder self-attention: rows predicted tokens, columns the decoder inputs.
    assert results["decoder"]["rows"] == OUTPUT
    assert results["decoder"]["columns"] == ["[START]", *OUTPUT[:-1]]
    np.testing.assert_allclose(results["decoder_output"]["target"], decoder[output], atol=6e-3)
    # Nothing clipped: no horizontal overflow, and the frame grew to the page's height.
    layout = results["layout"]
    assert layout["page_width"] <= layout["view_width"], layout
    assert layout["frame_height"] >= layout["page_height"] - 2, layout


def test_screenshots_of_the_page_in_the_site_frame(tmp_path):
    """For a person to look at: build/docs-screenshots/attention_*.png."""
    if docs_browser.chromium() is None:
        pytest.fail("Chromium is needed: 'apt-get install -y chromium'")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = attention_page.render_page(
        _spanish_data(),
        "Attention: 'My father bought me a new bicycle.' -> 'Mi padre me compró una bicicleta nueva.'",
    )
    # Hovering "new" (source 6) last leaves the cross-attention state with "nueva" lit.
    url = _in_frame(page, tmp_path / "outer.html", SITE_FRAME_WIDTH, 6, 6)
    shot = SCREENSHOTS / "attention_page_in_site_frame.png"
    docs_browser.screenshot(url, shot, width=SITE_FRAME_WIDTH + 40, height=900)
    assert shot.stat().st_size > 10_000
