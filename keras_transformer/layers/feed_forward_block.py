"""The feed-forward sub-layer of section 3.1: `FeedForward`, dropout (5.4), then `AddNorm`."""

import keras

from keras_transformer._validation import check_rate
from keras_transformer.layers._nested import ShowsSublayers
from keras_transformer.layers.add_norm import AddNorm
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForwardBlock(ShowsSublayers, keras.layers.Layer):
    r"""Feed-forward block: $\mathrm{AddNorm}(x, \mathrm{Dropout}(\mathrm{FFN}(x)))$.

    Section 3.1: the second sub-layer of every encoder and decoder layer. The block owns its
    `ffn` (`FeedForward`, section 3.3), its residual dropout (section 5.4) and its `add_norm`,
    as `SelfAttention` and `CrossAttention` own their attention.
    Masking: position-wise, so the input mask passes through unchanged.

    Args:
        dff, activation: inner size of the feed-forward network and its activation.
        dropout, norm_first: on the output before the residual add; pre-LN instead of post-LN.

    Call arguments:
        inputs, training: `(batch, seq_len, d_model)`; whether dropout is active.

    Returns:
        `(batch, seq_len, d_model)`.

    Example:
    >>> import numpy as np
    >>> block = FeedForwardBlock(dff=32)
    >>> tuple(block(np.random.rand(2, 5, 8).astype("float32")).shape)
    (2, 5, 8)
    >>> block.count_params()  # FFN 552, LayerNorm gamma and beta 16
    568

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, sections 3.1, 3.3, 5.4.
    """

    def __init__(
        self,
        dff: int,
        activation="relu",
        dropout: float = 0.1,
        norm_first: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_rate("dropout", dropout)
        self.dff, self.dropout, self.norm_first = dff, dropout, norm_first
        self.activation = keras.activations.get(activation)
        self.supports_masking = True

    def build(self, inputs_shape):
        dtype = self.dtype_policy
        self.ffn = FeedForward(self.dff, self.activation, dtype=dtype, name="ffn")
        self.ffn.build(inputs_shape)
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=dtype, name="dropout")
        self.add_norm = AddNorm(norm_first=self.norm_first, dtype=dtype, name="add_norm")
        self.add_norm.build(inputs_shape)

    def call(self, inputs, training=None):
        x = self.ffn(self.add_norm.normalize_input(inputs))  # (batch, seq_len, d_model)
        return self.add_norm(inputs, self.dropout_layer(x, training=training))

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = {"dff": self.dff, "dropout": self.dropout, "norm_first": self.norm_first}
        config["activation"] = keras.activations.serialize(self.activation)
        return {**super().get_config(), **config}
