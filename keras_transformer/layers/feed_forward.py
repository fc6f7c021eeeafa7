"""Position-wise feed-forward network (section 3.3 of the paper)."""

import keras

from keras_transformer._validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    r"""$\mathrm{FFN}(x) = \max(0,\, xW_1 + b_1)\,W_2 + b_2$, the same at every position.

    Section 3.3: `d_model` -> `dff` -> `d_model` at every position separately, with the same
    weights. The encoder and decoder layers wrap it in dropout, a residual and LayerNorm.
    Masking: position-wise, so the input mask passes through unchanged.

    Args:
        dff, activation: inner size (2048 in the paper's base model) and its activation.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.

    Returns:
        `(batch, seq_len, d_model)`.

    Example:
    >>> import numpy as np
    >>> ffn = FeedForward(dff=32)
    >>> tuple(ffn(np.random.rand(2, 5, 8).astype("float32")).shape)
    (2, 5, 8)
    >>> ffn.count_params()  # W1 8*32, b1 32, W2 32*8, b2 8
    552

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.3.
    """

    def __init__(self, dff: int, activation="relu", **kwargs):
        super().__init__(**kwargs)
        check_positive_int("dff", dff)
        self.dff = dff
        self.activation = keras.activations.get(activation)
        self.supports_masking = True

    def build(self, input_shape):
        dtype = self.dtype_policy
        self.inner_dense = keras.layers.Dense(
            self.dff, activation=self.activation, dtype=dtype, name="inner_dense"
        )
        self.inner_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(input_shape[-1], dtype=dtype, name="output_dense")
        self.output_dense.build((*input_shape[:-1], self.dff))

    def call(self, inputs):
        return self.output_dense(self.inner_dense(inputs))  # via (batch, seq_len, dff)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        activation = keras.activations.serialize(self.activation)
        return {**super().get_config(), "dff": self.dff, "activation": activation}
