"""Position-wise feed-forward sub-layer (section 3.3 of the paper)."""

from __future__ import annotations

import keras

from keras_transformer._validation import check_positive_int, check_rate
from keras_transformer.layers.add_norm import AddNorm


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    r"""$\mathrm{FFN}(x) = \max(0,\, xW_1 + b_1)\,W_2 + b_2$, with dropout and Add & Norm.

    Two dense layers applied to every position separately and identically
    (a 1x1 convolution), widening `d_model` to `dff` and back. Wrapped, like
    every sub-layer, in dropout, a residual connection and layer normalization.

    Masking: position-wise, so the input mask passes through unchanged.

    Args:
        dff: inner size (2048 in the paper's base model, 4 x d_model).
        dropout: dropout on the output before the residual add.
        activation: activation of the inner layer (the paper: `"relu"`).
        norm_first: pre-LN instead of the paper's post-LN.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        training: whether dropout is active.

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
        self,
        dff: int,
        dropout: float = 0.1,
        activation="relu",
        norm_first: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("dff", dff)
        check_rate("dropout", dropout)
        self.dff = dff
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.supports_masking = True

    def build(self, input_shape):
        d_model = input_shape[-1]
        self.inner_dense = keras.layers.Dense(
            self.dff, activation=self.activation, dtype=self.dtype_policy, name="inner_dense"
        )
        self.inner_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            d_model, dtype=self.dtype_policy, name="output_dense"
        )
        self.output_dense.build(tuple(input_shape[:-1]) + (self.dff,))
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.add_norm = AddNorm(
            norm_first=self.norm_first, dtype=self.dtype_policy, name="add_norm"
        )
        self.add_norm.build(input_shape)

    def call(self, inputs, training=None):
        h = self.add_norm.normalize_input(inputs)
        h = self.inner_dense(h)  # (batch, seq_len, dff)
        h = self.output_dense(h)  # (batch, seq_len, d_model)
        return self.add_norm(inputs, self.dropout_layer(h, training=training))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "dff": self.dff,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "norm_first": self.norm_first,
            }
        )
        return config
