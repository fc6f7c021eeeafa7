"""PaddingMask: values, symbolic shape, config."""

import keras
import numpy as np

from keras_transformer.layers import PaddingMask
from tests.helpers import assert_config_round_trip


def test_padding_mask_values_and_symbolic_shape():
    ids = np.array([[7, 2, 0, 0], [9, 9, 9, 1]])
    np.testing.assert_array_equal(PaddingMask()(ids), ids != 0)
    np.testing.assert_array_equal(PaddingMask(pad_id=9)(ids), ids != 9)
    symbolic = PaddingMask()(keras.Input((None,), dtype="int32"))
    assert symbolic.dtype == "bool" and tuple(symbolic.shape) == (None, None)
    assert_config_round_trip(PaddingMask(pad_id=3))
