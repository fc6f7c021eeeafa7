"""EncoderLayer and DecoderLayer: shapes, masking, cache, config, dropout."""

import keras
import numpy as np
import pytest

from keras_transformer.layers import DecoderLayer, EncoderLayer
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


def test_encoder_layer_shapes_weights_and_padding():
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


def test_decoder_layer_causal_and_source_padding():
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


def test_decoder_layer_scores_and_cached_steps():
    layer = DecoderLayer(num_heads=2, dff=16)
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 6, 8)).astype("float32")
    full, scores = layer(x, ctx, return_attention_scores=True)
    assert scores["self_attention"].shape == (2, 2, 4, 4)
    assert scores["cross_attention"].shape == (2, 2, 4, 6)
    cross_cache = layer.cross_attention_block.compute_cache(ctx)
    cache = np.zeros((2, 2, 4, 2, 4), "float32")
    steps = []
    for t in range(4):
        out, cache = layer(
            x[:, t : t + 1],
            self_attention_cache=cache,
            cross_attention_cache=cross_cache,
            cache_update_index=t,
        )
        steps.append(np.asarray(out))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_decoder_only_layer_and_missing_context_error():
    layer = DecoderLayer(num_heads=2, dff=16, cross_attention=False)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    assert tuple(layer(x).shape) == (2, 3, 8)
    assert layer.count_params() == 288 + 280 + 32  # same as an encoder layer
    with pytest.raises(ValueError, match="context"):
        DecoderLayer(num_heads=2, dff=16)(x)


def test_training_reaches_dropout_and_configs_round_trip():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    for layer in (
        EncoderLayer(num_heads=2, dff=16, dropout=0.5, norm_first=True),
        DecoderLayer(num_heads=2, dff=16, dropout=0.5, cross_attention=False),
    ):
        np.testing.assert_allclose(layer(x), layer(x, training=False))
        assert np.abs(np.asarray(layer(x, training=True)) - np.asarray(layer(x))).max() > 1e-3
        assert_config_round_trip(layer)


@pytest.mark.parametrize("kwargs", [dict(num_heads=0, dff=4), dict(num_heads=2, dff=0)])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError, match="num_heads|dff"):
        EncoderLayer(**kwargs)
