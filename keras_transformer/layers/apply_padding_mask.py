"""Zeroing the vectors of padded positions (for layers with no notion of a mask)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class ApplyPaddingMask(keras.layers.Layer):
    """Sets the vectors of padded positions to zero.

    A CNN encoder does so before every convolution (which knows no masks), so real
    positions see the same zeros as at the border. Masking: explicit; none on the output.

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: bool `(batch, seq_len)`, `True` on real tokens.

    Returns:
        `(batch, seq_len, dim)`, zero where `padding_mask` is `False`.

    Example:
    >>> import numpy as np
    >>> out = ApplyPaddingMask()(np.ones((1, 3, 2)), padding_mask=np.array([[True, True, False]]))
    >>> np.asarray(out)[0].tolist()
    [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    """

    def call(self, inputs, padding_mask):
        return inputs * ops.cast(ops.expand_dims(padding_mask, -1), inputs.dtype)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape
