"""SelfAttention (global, causal) and CrossAttention: masking, cache, config."""

import keras
import numpy as np
import pytest

from keras_transformer.layers import CrossAttention, SelfAttention
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_self_attention_ignores_padding(causal, norm_first):
    block = SelfAttention(num_heads=2, causal=causal, norm_first=norm_first, dropout=0.0)
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    short = block(x, padding_mask=np.ones((2, 4), bool))
    mask = np.array([[True] * 4 + [False] * 3] * 2)
    junk = RNG.normal(size=(2, 3, 8)).astype("float32")  # whatever sits at padded positions
    long = block(np.concatenate([x, junk], axis=1), padding_mask=mask)
    np.testing.assert_allclose(np.asarray(long)[:, :4], short, atol=1e-5)


def test_causal_prefix_invariance_and_global_lookahead():
    x = RNG.normal(size=(1, 6, 8)).astype("float32")
    changed = x.copy()
    changed[:, 4:] += 1.0
    causal = SelfAttention(num_heads=2, causal=True, dropout=0.0)
    a, b = np.asarray(causal(x)), np.asarray(causal(changed))
    np.testing.assert_allclose(a[:, :4], b[:, :4], atol=1e-6)
    glob = SelfAttention(num_heads=2, causal=False, dropout=0.0)
    a, b = np.asarray(glob(x)), np.asarray(glob(changed))
    assert np.abs(a[:, :4] - b[:, :4]).max() > 1e-3  # earlier positions see later ones


def test_causal_scores_are_lower_triangular():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    _, scores = SelfAttention(num_heads=2, causal=True)(x, return_attention_scores=True)
    scores = np.asarray(scores)
    assert np.all(np.triu(np.ones((5, 5)), k=1)[None, None] * scores == 0)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-6)


def test_cross_attention_ignores_source_padding_and_scores_are_zero_there():
    block = CrossAttention(num_heads=2, dropout=0.0)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 5, 8)).astype("float32")
    short = block(x, ctx, context_padding_mask=np.ones((2, 5), bool))
    noisy = np.concatenate([ctx, RNG.normal(size=(2, 2, 8)).astype("float32")], axis=1)
    mask = np.array([[True] * 5 + [False] * 2] * 2)
    long, scores = block(x, noisy, context_padding_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(long, short, atol=1e-5)
    assert np.all(np.asarray(scores)[..., 5:] == 0.0)


def test_cross_attention_cache_equals_context():
    block = CrossAttention(num_heads=2)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    full = block(x, ctx, context_padding_mask=mask)
    cached = block(x, None, context_padding_mask=mask, cache=block.compute_cache(ctx))
    np.testing.assert_allclose(cached, full, atol=1e-5)


def test_self_attention_cache_steps_equal_full_pass():
    block = SelfAttention(num_heads=2, causal=True)
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    full = np.asarray(block(x))
    cache = np.zeros((2, 2, 5, 2, 4), "float32")
    outs = []
    for t in range(5):
        out, cache = block(x[:, t : t + 1], cache=cache, cache_update_index=t)
        outs.append(np.asarray(out))
    np.testing.assert_allclose(np.concatenate(outs, 1), full, atol=1e-5)


def test_dropout_reaches_training_and_configs_round_trip():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    block = SelfAttention(num_heads=2, dropout=0.5, attention_dropout=0.3, causal=True)
    np.testing.assert_allclose(block(x), block(x, training=False))
    assert np.abs(np.asarray(block(x, training=True)) - np.asarray(block(x))).max() > 1e-3
    assert_config_round_trip(block)
    assert_config_round_trip(CrossAttention(num_heads=4, key_dim=3, norm_first=True))


def test_symbolic_shapes_with_dynamic_lengths():
    x = keras.Input((None, 8))
    ctx = keras.Input((None, 8))
    assert tuple(SelfAttention(num_heads=2)(x).shape) == (None, None, 8)
    out, scores = CrossAttention(num_heads=2)(x, ctx, return_attention_scores=True)
    assert tuple(out.shape) == (None, None, 8)
    assert tuple(scores.shape) == (None, 2, None, None)


def test_d_model_not_divisible_by_heads_is_a_clear_error():
    with pytest.raises(ValueError, match="d_model=10 must be divisible by num_heads=4"):
        SelfAttention(num_heads=4)(np.zeros((1, 2, 10), "float32"))
