"""Pooling a sequence of vectors into one vector, ignoring padding."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class SequencePooling(keras.layers.Layer):
    """`(batch, seq_len, d) -> (batch, d)` by the first token or a masked mean.

    `"cls"` takes the vector at position 0: with a `[START]` (or `[CLS]`)
    token first, the encoder learns to gather the sentence there, as in BERT.
    `"mean"` averages the real positions only; padding does not dilute it.

    Args:
        mode: `"cls"` or `"mean"`.

    Call arguments:
        inputs: `(batch, seq_len, d)`.
        padding_mask: bool `(batch, seq_len)`, needed for `"mean"`.

    Returns:
        `(batch, d)`.

    Example:

    >>> import numpy as np
    >>> x = np.array([[[1.0], [3.0], [100.0]]], "float32")
    >>> mask = np.array([[True, True, False]])
    >>> np.asarray(SequencePooling("mean")(x, padding_mask=mask)).tolist()
    [[2.0]]
    >>> np.asarray(SequencePooling("cls")(x)).tolist()
    [[1.0]]
    """

    MODES = ("cls", "mean")

    def __init__(self, mode: str = "cls", **kwargs):
        super().__init__(**kwargs)
        if mode not in self.MODES:
            raise ValueError(f"mode must be one of {self.MODES}; received mode={mode!r}.")
        self.mode = mode

    def call(self, inputs, padding_mask=None):
        if self.mode == "cls":
            return inputs[:, 0, :]
        if padding_mask is None:
            return ops.mean(inputs, axis=1)
        weights = ops.expand_dims(ops.cast(padding_mask, inputs.dtype), -1)  # (batch, seq_len, 1)
        total = ops.sum(inputs * weights, axis=1)
        count = ops.maximum(ops.sum(weights, axis=1), ops.cast(1.0, inputs.dtype))
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode})
        return config
