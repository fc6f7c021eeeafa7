"""Position-wise feed-forward sub-layer (section 3.3 of the paper)."""

import keras

from keras_transformer._validation import check_positive_int, check_rate
from keras_transformer.layers.add_norm import AddNorm


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    r"""$\mathrm{FFN}(x) = \max(0,\, xW_1 + b_1)\,W_2 + b_2$, with dropout and Add & Norm.

    Section 3.3: `d_model` -> `dff` -> `d_model` at every position separately.
    Masking: position-wise, so the input mask passes through unchanged.

    Args:
        dff, activation: inner size (2048 in the paper's base model) and activation.
        dropout, norm_first: dropout before the residual add; pre-LN instead of post-LN.

    Call arguments:
        inputs, training: `(batch, seq_len, d_model)`; whether dropout is active.

    Returns:
        `(batch, seq_len, d_model)`.

    Example:
    >>> import numpy as np
    >>> ffn = FeedForward(dff=32)
    >>> tuple(ffn(np.random.rand(2, 5, 8).astype("float32")).shape)
    (2, 5, 8)
    >>> ffn.count_params()  # 8*32+32 + 32*8+8 + LayerNorm 2*8
    568

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.3.
    """

    def __init__(
        self, dff: int, dropout: float = 0.1, activation="relu", norm_first: bool = False, **kwargs
    ):
        super().__init__(**kwargs)
        check_positive_int("dff", dff)
        check_rate("dropout", dropout)
        self.dff, self.dropout, self.norm_first = dff, dropout, norm_first
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
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=dtype, name="dropout")
        self.add_norm = AddNorm(norm_first=self.norm_first, dtype=dtype, name="add_norm")
        self.add_norm.build(input_shape)

    def call(self, inputs, training=None):
        h = self.inner_dense(self.add_norm.normalize_input(inputs))  # (batch, seq_len, dff)
        h = self.output_dense(h)  # (batch, seq_len, d_model)
        return self.add_norm(inputs, self.dropout_layer(h, training=training))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        activation = keras.activations.serialize(self.activation)
        config = {"dff": self.dff, "dropout": self.dropout, "activation": activation}
        return {**super().get_config(), **config, "norm_first": self.norm_first}
