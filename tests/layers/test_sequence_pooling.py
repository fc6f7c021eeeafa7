"""SequencePooling: values, padding ignored, config, save/load, errors."""

import keras
import numpy as np
import pytest

from keras_transformer.layers import PaddingMask, SequencePooling
from tests.helpers import assert_config_round_trip, assert_save_load_identical


@pytest.mark.parametrize("mode", ["cls", "mean"])
def test_pooling_ignores_padding_and_round_trips(mode, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[True, True, True, False, False], [True] * 5])
    pooled = np.asarray(SequencePooling(mode)(x, padding_mask=mask))
    if mode == "cls":
        np.testing.assert_allclose(pooled, x[:, 0])
    else:
        np.testing.assert_allclose(pooled[0], x[0, :3].mean(0), rtol=1e-5)
        np.testing.assert_allclose(pooled[1], x[1].mean(0), rtol=1e-5)
    junk = x.copy()
    junk[0, 3:] = 100.0  # padded positions do not count
    np.testing.assert_allclose(SequencePooling(mode)(junk, padding_mask=mask), pooled, rtol=1e-5)
    assert_config_round_trip(SequencePooling(mode))
    ids = keras.Input((None,), dtype="int32")
    vectors = keras.layers.Embedding(10, 3)(ids)
    model = keras.Model(ids, SequencePooling(mode)(vectors, padding_mask=PaddingMask()(ids)))
    assert_save_load_identical(model, np.array([[4, 5, 0], [6, 0, 0]]), tmp_path)


def test_pooling_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode must be one of"):
        SequencePooling("max")
