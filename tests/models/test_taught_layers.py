"""The models run the layers the course teaches: one attention function, blocks, AddNorm."""

import inspect

import numpy as np
import pytest

from keras_transformer import layers as kt_layers
from keras_transformer.layers import attention as attention_module
from keras_transformer.models import (
    build_classifier,
    build_language_model,
    build_transformer,
    layer_tree,
)
from keras_transformer.models.inspection import sublayers
from tests.helpers import SMALL_MODEL

SIZE = {**SMALL_MODEL, "max_length": 16}
RNG = np.random.default_rng(0)


def all_layers(model):
    found, stack = [], list(model.layers)
    while stack:
        layer = stack.pop()
        found.append(layer)
        stack.extend(sublayers(layer))
    return found


def count(model, cls):
    return sum(type(layer) is cls for layer in all_layers(model))


def transformer_inputs(batch=2):
    return {
        "source": RNG.integers(1, 30, (batch, 5)).astype("int32"),
        "target": RNG.integers(1, 25, (batch, 4)).astype("int32"),
    }


@pytest.mark.parametrize("norm_first", [False, True])
def test_every_attention_of_a_forward_pass_calls_scaled_dot_product_attention(
    monkeypatch, norm_first
):
    model = build_transformer(30, 25, norm_first=norm_first, **SIZE)
    inputs = transformer_inputs()
    expected = np.asarray(model(inputs, training=False))
    calls = []
    original = attention_module.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(tuple(args[0].shape))  # (batch, heads, q_len, key_dim)
        return original(*args, **kwargs)

    monkeypatch.setattr(attention_module, "scaled_dot_product_attention", spy)
    got = np.asarray(model(inputs, training=False))
    # 2 encoder self-attentions, 2 x (decoder self-attention + cross-attention)
    assert len(calls) == 2 + 2 * 2
    assert sorted(calls) == sorted([(2, 2, 5, 8)] * 2 + [(2, 2, 4, 8)] * 4)
    np.testing.assert_array_equal(got, expected)


def test_a_broken_attention_function_breaks_the_model(monkeypatch):
    """The spy above cannot pass by accident: the model's output depends on the function."""
    model = build_transformer(30, 25, **SIZE)
    inputs = transformer_inputs()
    before = np.asarray(model(inputs, training=False))
    original = attention_module.scaled_dot_product_attention

    def no_scaling(query, key, value, mask=None, **kwargs):
        return original(query * 4.0, key, value, mask, **kwargs)

    monkeypatch.setattr(attention_module, "scaled_dot_product_attention", no_scaling)
    assert np.abs(np.asarray(model(inputs, training=False)) - before).max() > 1e-3


@pytest.mark.parametrize("num_layers", [1, 3])
def test_the_transformer_is_made_of_the_taught_blocks(num_layers):
    model = build_transformer(30, 25, **dict(SIZE, num_layers=num_layers))
    n = num_layers
    assert count(model, kt_layers.EncoderLayer) == n
    assert count(model, kt_layers.DecoderLayer) == n
    assert count(model, kt_layers.SelfAttention) == 2 * n  # encoder + decoder (causal)
    assert count(model, kt_layers.CrossAttention) == n
    assert count(model, kt_layers.FeedForwardBlock) == 2 * n
    assert count(model, kt_layers.FeedForward) == 2 * n
    assert count(model, kt_layers.AddNorm) == 5 * n  # 2 per encoder layer, 3 per decoder layer
    assert count(model, kt_layers.MultiHeadAttention) == 3 * n
    causal = [b.causal for b in all_layers(model) if isinstance(b, kt_layers.SelfAttention)]
    assert sorted(causal) == [False] * n + [True] * n


def test_decoder_only_and_encoder_only_models_use_the_same_blocks():
    lm = build_language_model(40, **SIZE)
    assert count(lm, kt_layers.CrossAttention) == 0
    assert count(lm, kt_layers.SelfAttention) == 2 and count(lm, kt_layers.AddNorm) == 4
    classifier = build_classifier(40, 3, **SIZE)
    assert count(classifier, kt_layers.SelfAttention) == 2
    assert count(classifier, kt_layers.AddNorm) == 4


@pytest.mark.parametrize("cls", [kt_layers.EncoderLayer, kt_layers.DecoderLayer])
def test_layer_calls_are_short_and_free_of_plumbing(cls):
    source = inspect.getsource(cls.call)
    body = [line for line in source.splitlines() if line.strip()]
    assert len(body) <= 40, f"{cls.__name__}.call has {len(body)} lines"
    for plumbing in ("LayerNormalization", "Dropout", "cache", "ops.", "_keras_mask", "+ "):
        assert plumbing not in source, f"{cls.__name__}.call contains {plumbing!r}"


def test_layer_tree_opens_the_layers_that_summary_does_not():
    tree = layer_tree(build_transformer(30, 25, **dict(SIZE, num_layers=1)))
    for line in (
        "encoder_layer_0 (EncoderLayer)",
        "  self_attention (SelfAttention)",
        "    attention (MultiHeadAttention)",
        "    add_norm (AddNorm)",
        "  cross_attention (CrossAttention)",
        "  feed_forward (FeedForwardBlock)",
        "    ffn (FeedForward)",
    ):
        assert line in tree
    assert tree.count("(AddNorm)") == 5


def test_summary_expand_nested_shows_the_taught_blocks():
    model = build_transformer(30, 25, **dict(SIZE, num_layers=1))
    lines = []
    model.summary(expand_nested=True, print_fn=lines.append, line_length=200)
    text = "\n".join(lines)
    for shown in (
        "self_attention (SelfAttention)",
        "cross_attention (CrossAttention)",
        "attention (MultiHeadAttention)",
        "add_norm (AddNorm)",
        "feed_forward (FeedForwardBlock)",
        "ffn (FeedForward)",
    ):
        assert shown in text, shown
    assert text.count("(AddNorm)") == 5  # encoder: 2; decoder: 3
    flat = []
    model.summary(print_fn=flat.append, line_length=200)  # without expand_nested: as before
    assert "(AddNorm)" not in "\n".join(flat)


def test_the_blocks_list_their_sublayers_without_moving_their_saved_weights(tmp_path):
    """`layers` is what summary opens; left out of `dir()`, the .keras weight paths keep
    `.../self_attention/...` (files saved before load unchanged)."""
    import io
    import zipfile

    import h5py

    model = build_transformer(30, 25, **dict(SIZE, num_layers=1))
    encoder_layer = model.get_layer("encoder_layer_0")
    assert [layer.name for layer in encoder_layer.layers] == ["self_attention", "feed_forward"]
    assert "layers" not in dir(encoder_layer)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        weights = h5py.File(io.BytesIO(archive.read("model.weights.h5")))
        paths = []
        weights.visit(paths.append)
    assert "layers/encoder_layer/self_attention/attention/query_dense/vars/0" in paths
    assert not [path for path in paths if "/layers/" in path.partition("layers/")[2]]
