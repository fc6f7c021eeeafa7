"""Explicit padding mask from token ids."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class PaddingMask(keras.layers.Layer):
    """Boolean mask `ids != pad_id`, `True` on real tokens.

    The builders pass it explicitly: a propagated mask is lost by e.g. `Add`.

    Args:
        pad_id: the padding token id.

    Call arguments:
        inputs: int ids `(batch, seq_len)`.

    Returns:
        bool `(batch, seq_len)`.

    Example:
    >>> import numpy as np
    >>> np.asarray(PaddingMask()(np.array([[7, 2, 0, 0]]))).tolist()
    [[True, True, False, False]]
    """

    def __init__(self, pad_id: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.pad_id = pad_id

    def call(self, inputs):
        return ops.not_equal(inputs, self.pad_id)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, "bool")

    def get_config(self):
        return {**super().get_config(), "pad_id": self.pad_id}
