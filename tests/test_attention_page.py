"""`keras-transformer attention`: a self-contained page, rendered in headless Chromium."""

import html
import re
import subprocess
import sys

import numpy as np
import pytest

from keras_transformer import attention_page, cli
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


def test_encoder_only_data_has_one_kind():
    data = attention_page.attention_data(["a", "b"], [], {"encoder self": [np.eye(2)[None]]})
    assert list(data["kinds"]) == ["encoder self"]
    with pytest.raises(ValueError, match=r"cross layer 0: weights of shape \(1, 2, 2\)"):
        attention_page.attention_data(["a", "b"], ["x"], {"cross": [np.eye(2)[None]]})


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
