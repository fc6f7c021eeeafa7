"""Zeroing the vectors of padded positions (for layers with no notion of a mask)."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class ApplyPaddingMask(keras.layers.Layer):
    """Sets the vectors of padded positions to zero.

    A convolution mixes each position with its neighbours and has no notion of
    a mask, so a CNN encoder zeroes the padded positions before every
    convolution: a real position next to the end of the sentence then sees
    zeros whether the sentence was padded or not (the same zeros that
    `padding="same"` adds at the border), and its output does not depend on
    how much padding follows.

    Masking: the mask is an explicit call argument; the output carries no mask.

    Call arguments:
        inputs: `(batch, seq_len, dim)`.
        padding_mask: bool `(batch, seq_len)`, `True` on real tokens.

    Returns:
        `(batch, seq_len, dim)`, zero where `padding_mask` is `False`.

    Example:

    >>> import numpy as np
    >>> x = np.ones((1, 3, 2), "float32")
    >>> np.asarray(ApplyPaddingMask()(x, padding_mask=np.array([[True, True, False]])))[0].tolist()
    [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    """

    def call(self, inputs, padding_mask):
        keep = ops.cast(ops.expand_dims(padding_mask, -1), inputs.dtype)  # (batch, seq_len, 1)
        return inputs * keep

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape
