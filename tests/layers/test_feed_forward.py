"""FeedForward: the paper's formula, weight count, dropout, config."""

import numpy as np
import pytest

from keras_transformer.layers import FeedForward
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


def layer_norm(x, eps=1e-6):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


def test_equals_relu_mlp_with_add_and_norm():
    x = RNG.normal(size=(2, 4, 6)).astype("float32")
    ffn = FeedForward(dff=10, dropout=0.0)
    out = np.asarray(ffn(x))
    w1, b1 = (np.asarray(w) for w in ffn.inner_dense.weights)
    w2, b2 = (np.asarray(w) for w in ffn.output_dense.weights)
    expected = layer_norm(x + (np.maximum(x @ w1 + b1, 0) @ w2 + b2))
    np.testing.assert_allclose(out, expected, atol=1e-4)
    assert ffn.count_params() == 6 * 10 + 10 + 10 * 6 + 6 + 2 * 6


def test_dropout_only_in_training_and_config():
    x = RNG.normal(size=(2, 4, 6)).astype("float32")
    ffn = FeedForward(dff=10, dropout=0.5, activation="gelu", norm_first=True)
    np.testing.assert_allclose(ffn(x), ffn(x, training=False))
    assert np.abs(np.asarray(ffn(x, training=True)) - np.asarray(ffn(x))).max() > 1e-3
    assert_config_round_trip(ffn)


@pytest.mark.parametrize("kwargs", [dict(dff=0), dict(dff=4, dropout=-0.1)])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError, match="dff|dropout"):
        FeedForward(**kwargs)
