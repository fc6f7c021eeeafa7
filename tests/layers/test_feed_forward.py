"""FeedForward: the paper's formula, position-wise, weight count, config, errors."""

import math

import numpy as np
import pytest

from keras_transformer.layers import FeedForward
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)


def test_equals_the_relu_mlp_of_section_3_3():
    x = RNG.normal(size=(2, 4, 6)).astype("float32")
    ffn = FeedForward(dff=10)
    out = np.asarray(ffn(x))
    w1, b1 = (np.asarray(w) for w in ffn.inner_dense.weights)
    w2, b2 = (np.asarray(w) for w in ffn.output_dense.weights)
    np.testing.assert_allclose(out, np.maximum(x @ w1 + b1, 0) @ w2 + b2, atol=1e-5)
    assert ffn.count_params() == 6 * 10 + 10 + 10 * 6 + 6
    one_by_one = np.concatenate([np.asarray(ffn(x[:, t : t + 1])) for t in range(4)], axis=1)
    np.testing.assert_allclose(one_by_one, out, atol=1e-6)  # position-wise


def test_activation_and_config():
    x = RNG.normal(size=(2, 4, 6)).astype("float32")
    ffn = FeedForward(dff=10, activation="gelu")
    ffn.build(x.shape)
    w1, b1, w2, b2 = (np.asarray(w) for w in ffn.weights)
    inner = x @ w1 + b1
    gelu = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / np.sqrt(2)))  # Keras's exact GELU
    np.testing.assert_allclose(ffn(x), gelu @ w2 + b2, atol=1e-5)
    assert_config_round_trip(ffn, dff=10)


@pytest.mark.parametrize(
    "dff, error", [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_invalid_dff_is_named(dff, error):
    with pytest.raises(error, match=f"dff={dff!r}"):
        FeedForward(dff=dff)
