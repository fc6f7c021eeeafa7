"""Path length through gradients: the RNN's decay with distance, the Transformer's does not."""

import numpy as np
import pytest

from keras_transformer.analysis import decay_ratio, gradient_curves, gradient_norms


def test_rnn_gradients_vanish_with_distance_transformer_gradients_do_not():
    curves = gradient_curves(("rnn", "lstm", "transformer"), 24, d=8, seeds=2)
    for kind in ("rnn", "lstm"):
        norms = np.array(curves[kind]["norm"])
        assert norms[1] > norms[8] > norms[20] > 0  # decays with distance
        assert curves[kind]["decay_ratio"] < 0.05
    transformer = curves["transformer"]
    assert 0.3 < transformer["decay_ratio"] < 3.0  # flat: one step from any input
    assert transformer["decay_ratio"] > 20 * curves["lstm"]["decay_ratio"]
    assert transformer["decay_ratio"] > 20 * curves["rnn"]["decay_ratio"]


def test_cnn_gradient_is_zero_beyond_the_receptive_field():
    norms = gradient_norms("cnn", 12, d=4, seeds=1, kernel_size=3, conv_layers=2)
    reach = 2 * (3 - 1)  # causal: each layer looks k - 1 positions back
    assert np.all(norms[: reach + 1] > 0)
    assert np.all(norms[reach + 1 :] == 0)


def test_norms_are_averaged_over_seeds_and_indexed_by_distance():
    one = gradient_norms("rnn", 6, d=4, seeds=1)
    two = gradient_norms("rnn", 6, d=4, seeds=2)
    assert one.shape == two.shape == (6,)
    assert not np.allclose(one, two)
    assert one[0] > one[-1]  # distance 0 (the last input) comes first


def test_decay_ratio_and_errors():
    assert decay_ratio(np.array([3.0, 2.0, 1.0])) == 0.5
    assert decay_ratio(np.array([3.0, 0.0, 0.0])) == 0.0
    with pytest.raises(ValueError, match="length of at least 3"):
        decay_ratio(np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="kind='mlp'"):
        gradient_norms("mlp", 4)
