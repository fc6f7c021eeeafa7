"""EncoderLayer: a hand-written Keras reference (post-LN and pre-LN), shapes, padding, config."""

import keras
import numpy as np
import pytest

from keras_transformer.layers import EncoderLayer
from tests.helpers import assert_config_round_trip, assert_save_load_identical

RNG = np.random.default_rng(0)


def reference_encoder_layer(layer, x, padding_mask, norm_first):
    """The same function from Keras's own layers, with `layer`'s weights, written out by hand."""
    d_model, heads = x.shape[-1], layer.num_heads
    mha = keras.layers.MultiHeadAttention(heads, d_model // heads)
    norm1, norm2 = (keras.layers.LayerNormalization(epsilon=1e-6) for _ in range(2))
    inner, outer = keras.layers.Dense(layer.dff, activation="relu"), keras.layers.Dense(d_model)
    mha(x, x), norm1(x), norm2(x), outer(inner(x))  # build
    weights = layer.get_weights()  # attention 8, norm 2, feed-forward 4, norm 2
    mha.set_weights(weights[:8])
    norm1.set_weights(weights[8:10])
    inner.set_weights(weights[10:12])
    outer.set_weights(weights[12:14])
    norm2.set_weights(weights[14:16])
    mask = padding_mask[:, None, :]  # (batch, 1, seq_len)
    x = keras.ops.convert_to_tensor(x)  # tensor + tensor on every backend (torch too)
    if norm_first:
        h = x + mha(norm1(x), norm1(x), attention_mask=mask)
        return h + outer(inner(norm2(h)))
    h = norm1(x + mha(x, x, attention_mask=mask))
    return norm2(h + outer(inner(h)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_keras_layers_wired_by_hand(norm_first):
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    padding_mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    layer = EncoderLayer(num_heads=2, dff=16, norm_first=norm_first)
    layer(x)
    for w in layer.weights:  # non-trivial norms and biases
        w.assign(RNG.normal(size=w.shape).astype("float32") * 0.5 + (w.name == "gamma"))
    expected = np.asarray(reference_encoder_layer(layer, x, padding_mask, norm_first))
    got = np.asarray(layer(x, padding_mask=padding_mask))
    real = padding_mask  # padded queries are meaningless (Keras averages, ours zeroes)
    np.testing.assert_allclose(got[real], expected[real], atol=1e-4)


def test_shapes_weights_and_padding():
    layer = EncoderLayer(num_heads=2, dff=16, dropout=0.0)
    assert tuple(layer(keras.Input((None, 8))).shape) == (None, None, 8)
    # attention 4*(8*8+8) + ffn 8*16+16+16*8+8 + 2 LayerNorms 2*2*8
    assert layer.count_params() == 288 + 280 + 32
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    short = layer(x, padding_mask=np.ones((2, 4), bool))
    long = layer(
        np.concatenate([x, RNG.normal(size=(2, 2, 8)).astype("float32")], 1),
        padding_mask=np.array([[True] * 4 + [False] * 2] * 2),
    )
    np.testing.assert_allclose(np.asarray(long)[:, :4], short, atol=1e-5)
    out, scores = layer(x, return_attention_scores=True)
    assert tuple(scores.shape) == (2, 2, 4, 4)
    np.testing.assert_allclose(out, short, atol=1e-6)


def test_training_reaches_dropout_config_and_save_load(tmp_path):
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    layer = EncoderLayer(num_heads=2, dff=16, dropout=0.5, norm_first=True)
    np.testing.assert_allclose(layer(x), layer(x, training=False))
    assert np.abs(np.asarray(layer(x, training=True)) - np.asarray(layer(x))).max() > 1e-3
    assert_config_round_trip(layer, num_heads=2, dff=16, dropout=0.5, norm_first=True)
    inputs = keras.Input((None, 8))
    model = keras.Model(inputs, EncoderLayer(num_heads=2, dff=16)(inputs))
    assert_save_load_identical(model, x, tmp_path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_heads=0, dff=4), "num_heads=0"),
        (dict(num_heads=2, dff=0), "dff=0"),
        (dict(num_heads=3, dff=4), "d_model=8 must be divisible by num_heads=3"),
    ],
)
def test_invalid_arguments_are_named_when_built(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EncoderLayer(**kwargs)(np.zeros((1, 2, 8), "float32"))
