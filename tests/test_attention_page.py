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
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "--out" in completed.stdout
