"""Cosine similarities of every pair in a batch: the logits of in-batch negatives."""

import keras
from keras import ops

from keras_transformer.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_transformer")
class InBatchSimilarity(keras.layers.Layer):
    """Cosine similarity of every left vector with every right vector, over a temperature.

    Args:
        temperature: divides the cosines (small values sharpen the softmax).

    Call arguments:
        inputs: `[left, right]`, each `(batch, d)`.

    Returns:
        float32 logits `(batch, batch)`; row `i`'s right answer is column `i`.

    Example:
    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [0.0, 2.0]], "float32")
    >>> np.asarray(InBatchSimilarity(temperature=1.0)([x, x])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, temperature: float = 0.05, **kwargs):
        super().__init__(**kwargs)
        if not temperature > 0:
            raise UserInputError(f"temperature must be > 0; received temperature={temperature}.")
        self.temperature = temperature

    def call(self, inputs):
        unit = (ops.cast(x, "float32") for x in inputs)
        left, right = (x / ops.maximum(ops.norm(x, axis=-1, keepdims=True), 1e-12) for x in unit)
        return ops.matmul(left, ops.transpose(right)) / self.temperature  # (batch, batch)

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature}
