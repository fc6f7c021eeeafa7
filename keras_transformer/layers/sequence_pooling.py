"""Pooling a sequence of vectors into one vector, ignoring padding."""

import keras
from keras import ops

from keras_transformer.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_transformer")
class SequencePooling(keras.layers.Layer):
    """`(batch, seq_len, d) -> (batch, d)` by the first token or a masked mean.

    Args:
        mode: `"cls"` (position 0: a `[START]`/`[CLS]` token) or `"mean"` (of real positions).

    Call arguments:
        inputs: `(batch, seq_len, d)`.
        padding_mask: bool `(batch, seq_len)`, needed for `"mean"`.

    Returns:
        `(batch, d)`.

    Example:
    >>> import numpy as np
    >>> x = np.array([[[1.0], [3.0], [100.0]]], "float32")
    >>> mask = np.array([[True, True, False]])
    >>> [np.asarray(SequencePooling(m)(x, padding_mask=mask)).tolist() for m in ("mean", "cls")]
    [[[2.0]], [[1.0]]]
    """

    MODES = ("cls", "mean")

    def __init__(self, mode: str = "cls", **kwargs):
        super().__init__(**kwargs)
        if mode not in self.MODES:
            raise UserInputError(f"mode must be one of {self.MODES}; received mode={mode!r}.")
        self.mode = mode

    def call(self, inputs, padding_mask=None):
        if self.mode == "cls":
            return inputs[:, 0, :]
        if padding_mask is None:
            return ops.mean(inputs, axis=1)
        weights = ops.expand_dims(ops.cast(padding_mask, inputs.dtype), -1)  # (batch, seq_len, 1)
        count = ops.maximum(ops.sum(weights, axis=1), ops.cast(1.0, inputs.dtype))
        return ops.sum(inputs * weights, axis=1) / count

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}
