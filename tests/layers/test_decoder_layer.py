"""DecoderLayer: equals the encoder layer's wiring plus cross-attention; causal, cache, config."""

import keras
import numpy as np
import pytest

from keras_transformer.layers import (
    AddNorm,
    CrossAttention,
    DecoderLayer,
    FeedForwardBlock,
    MultiHeadAttention,
    SelfAttention,
)
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


def test_causal_and_source_padding():
    layer = DecoderLayer(num_heads=2, dff=16, dropout=0.0)
    x = RNG.normal(size=(1, 5, 8)).astype("float32")
    ctx = RNG.normal(size=(1, 4, 8)).astype("float32")
    base = np.asarray(layer(x, ctx))
    changed = x.copy()
    changed[:, 3:] -= 2.0
    np.testing.assert_allclose(np.asarray(layer(changed, ctx))[:, :3], base[:, :3], atol=1e-5)
    padded_ctx = np.concatenate([ctx, np.ones((1, 3, 8), "float32")], 1)
    mask = np.array([[True] * 4 + [False] * 3])
    np.testing.assert_allclose(layer(x, padded_ctx, context_padding_mask=mask), base, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_keras_layers_wired_by_hand(norm_first):
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 6, 8)).astype("float32")
    layer = DecoderLayer(num_heads=2, dff=16, norm_first=norm_first)
    layer(x, ctx)
    weights = layer.get_weights()  # self-attention 8, norm 2, cross 8, norm 2, ffn 4, norm 2
    self_mha, cross_mha = (keras.layers.MultiHeadAttention(2, 4) for _ in range(2))
    norms = [keras.layers.LayerNormalization(epsilon=1e-6) for _ in range(3)]
    inner, outer = keras.layers.Dense(16, activation="relu"), keras.layers.Dense(8)
    self_mha(x, x), cross_mha(x, ctx), outer(inner(x)), [n(x) for n in norms]
    self_mha.set_weights(weights[0:8])
    norms[0].set_weights(weights[8:10])
    cross_mha.set_weights(weights[10:18])
    norms[1].set_weights(weights[18:20])
    inner.set_weights(weights[20:22])
    outer.set_weights(weights[22:24])
    norms[2].set_weights(weights[24:26])
    sublayers = [
        lambda h: self_mha(h, h, use_causal_mask=True),
        lambda h: cross_mha(h, ctx),
        lambda h: outer(inner(h)),
    ]
    expected = keras.ops.convert_to_tensor(x)  # tensor + tensor on every backend
    for sublayer, norm in zip(sublayers, norms, strict=True):
        if norm_first:
            expected = expected + sublayer(norm(expected))
        else:
            expected = norm(expected + sublayer(expected))
    np.testing.assert_allclose(layer(x, ctx), expected, atol=1e-4)


def test_scores_and_cached_steps():
    layer = DecoderLayer(num_heads=2, dff=16)
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 6, 8)).astype("float32")
    full, scores = layer(x, ctx, return_attention_scores=True)
    assert scores["self_attention"].shape == (2, 2, 4, 4)
    assert scores["cross_attention"].shape == (2, 2, 4, 6)
    cross_cache = layer.cross_attention.compute_cache(ctx)
    cache = np.zeros((2, 2, 4, 2, 4), "float32")
    steps = []
    for t in range(4):
        out, cache = layer.call_with_cache(
            x[:, t : t + 1],
            self_attention_cache=cache,
            cache_update_index=t,
            cross_attention_cache=cross_cache,
        )
        steps.append(np.asarray(out))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_decoder_only_layer_and_missing_context_error():
    layer = DecoderLayer(num_heads=2, dff=16, use_cross_attention=False)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    assert tuple(layer(x).shape) == (2, 3, 8)
    assert layer.count_params() == 288 + 280 + 32  # same as an encoder layer
    with pytest.raises(ValueError, match="context"):
        DecoderLayer(num_heads=2, dff=16)(x)


def test_training_reaches_dropout_and_configs_round_trip():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    layer = DecoderLayer(num_heads=2, dff=16, dropout=0.5, use_cross_attention=False)
    np.testing.assert_allclose(layer(x), layer(x, training=False))
    assert np.abs(np.asarray(layer(x, training=True)) - np.asarray(layer(x))).max() > 1e-3
    assert_config_round_trip(layer, use_cross_attention=False, dropout=0.5)


def test_a_layer_saved_with_the_old_weight_layout_is_refused_in_one_line():
    config = DecoderLayer(num_heads=2, dff=16, use_cross_attention=False).get_config()
    assert config.pop("weights_layout") == 2
    config["cross_attention"] = False  # as keras_transformer 0.1 saved it
    with pytest.raises(ValueError, match=r"saved by keras_transformer 0\.1") as error:
        DecoderLayer.from_config(config)
    assert "\n" not in str(error.value) and "pip install keras_transformer==0.1.0" in str(
        error.value
    )


def test_built_from_the_taught_blocks():
    layer = DecoderLayer(num_heads=2, dff=16)
    layer(RNG.normal(size=(1, 3, 8)).astype("float32"), RNG.normal(size=(1, 4, 8)))
    assert isinstance(layer.self_attention, SelfAttention) and layer.self_attention.causal
    assert isinstance(layer.cross_attention, CrossAttention)
    assert isinstance(layer.feed_forward, FeedForwardBlock)
    blocks = (layer.self_attention, layer.cross_attention, layer.feed_forward)
    assert all(isinstance(block.add_norm, AddNorm) for block in blocks)
    assert all(isinstance(b.attention, MultiHeadAttention) for b in blocks[:2])
