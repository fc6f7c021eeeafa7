"""AddNorm against keras.layers.LayerNormalization."""

import keras
import numpy as np

from keras_transformer.layers import AddNorm
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


def test_post_ln_is_layernorm_of_the_sum():
    x, y = (RNG.normal(size=(2, 3, 6)).astype("float32") for _ in range(2))
    layer = AddNorm()
    out = layer(x, y)
    reference = keras.layers.LayerNormalization(epsilon=1e-6)
    reference.build(x.shape)
    np.testing.assert_allclose(out, reference(x + y), atol=1e-5)
    assert len(layer.weights) == 2


def test_pre_ln_adds_and_normalizes_the_sublayer_input():
    x, y = (RNG.normal(size=(2, 3, 6)).astype("float32") for _ in range(2))
    layer = AddNorm(norm_first=True)
    np.testing.assert_allclose(layer(x, y), x + y, atol=1e-6)
    normalized = np.asarray(layer.normalize_input(x))
    np.testing.assert_allclose(normalized.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(normalized.std(-1), 1.0, atol=1e-3)
    post_ln = AddNorm()
    post_ln.build(x.shape)
    np.testing.assert_array_equal(post_ln.normalize_input(x), x)  # post-LN: input unchanged


def test_mask_passes_through_and_config_round_trip():
    emb = keras.layers.Embedding(5, 4, mask_zero=True)
    x = emb(np.array([[1, 0]]))
    np.testing.assert_array_equal(AddNorm()(x, x)._keras_mask, [[True, False]])
    assert_config_round_trip(AddNorm(norm_first=True, epsilon=1e-3))
