"""One layer of the Transformer encoder (section 3.1 of the paper), readable top-down.

Self-attention lives in attention.py, the feed-forward network in feed_forward.py; the residual
connections and layer normalizations are written out in `EncoderLayer.call`.
"""

import keras
from keras import ops

from keras_transformer.layers.attention import attention_for
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderLayer(keras.layers.Layer):
    r"""Global self-attention, then a feed-forward network, each with a residual and LayerNorm.

    Section 3.1: every position attends to every real position, before and after it. Each
    sub-layer's output goes through dropout (section 5.4) and is added to its input; post-LN
    (the paper) normalizes the sum, $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$, pre-LN
    (`norm_first=True`) the sub-layer's input, $x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$.
    Masking: padded positions (`padding_mask` False) are never attended to.

    Args:
        num_heads, dff: attention heads; inner size of the feed-forward network.
        key_dim: size per head; default `d_model // num_heads` (checked when built).
        dropout, attention_dropout: residual dropout (section 5.4), on attention weights.
        activation, norm_first: feed-forward activation; pre-LN instead of post-LN.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        padding_mask, training: optional bool `(batch, seq_len)`; whether dropout is active.
        return_attention_scores: also return `(batch, num_heads, seq_len, seq_len)`.

    Returns:
        `(batch, seq_len, d_model)` (and the scores if asked).

    Example:
    >>> import numpy as np
    >>> tuple(EncoderLayer(num_heads=2, dff=16)(np.random.rand(2, 5, 8).astype("float32")).shape)
    (2, 5, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1; Xiong et al., 2020
        (pre-LN).
    """

    def __init__(
        self,
        num_heads: int,
        dff: int,
        key_dim: int | None = None,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation="relu",
        norm_first: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads, self.dff, self.key_dim = num_heads, dff, key_dim
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.supports_masking = True

    def build(self, input_shape):
        d_model, dtype = input_shape[-1], self.dtype_policy
        # Sub-layer 1: multi-head self-attention, its LayerNorm and its residual dropout.
        self.self_attention = attention_for(
            d_model,
            self.num_heads,
            self.key_dim,
            dropout=self.attention_dropout,
            dtype=dtype,
            name="self_attention",
        )
        self.self_attention.build(input_shape, input_shape)
        self.self_attention_norm = keras.layers.LayerNormalization(
            epsilon=1e-6, dtype=dtype, name="self_attention_norm"
        )
        self.self_attention_norm.build(input_shape)
        self.self_attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=dtype, name="self_attention_dropout"
        )
        # Sub-layer 2: the position-wise feed-forward network, wrapped the same way.
        self.feed_forward = FeedForward(self.dff, self.activation, dtype=dtype, name="feed_forward")
        self.feed_forward.build(input_shape)
        self.feed_forward_norm = keras.layers.LayerNormalization(
            epsilon=1e-6, dtype=dtype, name="feed_forward_norm"
        )
        self.feed_forward_norm.build(input_shape)
        self.feed_forward_dropout = keras.layers.Dropout(
            self.dropout, dtype=dtype, name="feed_forward_dropout"
        )

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False):
        # (batch, 1, seq_len): every query may attend to the real keys
        mask = None if padding_mask is None else ops.expand_dims(padding_mask, 1)

        # Self-attention sub-layer
        residual = x = inputs  # (batch, seq_len, d_model)
        if self.norm_first:
            x = self.self_attention_norm(x)
        x = self.self_attention(
            x,
            x,
            attention_mask=mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            x, scores = x  # scores: (batch, num_heads, seq_len, seq_len)
        x = residual + self.self_attention_dropout(x, training=training)
        if not self.norm_first:
            x = self.self_attention_norm(x)

        # Feed-forward sub-layer
        residual = x
        if self.norm_first:
            x = self.feed_forward_norm(x)
        x = self.feed_forward(x)  # (batch, seq_len, d_model)
        x = residual + self.feed_forward_dropout(x, training=training)
        if not self.norm_first:
            x = self.feed_forward_norm(x)
        return (x, scores) if return_attention_scores else x

    def get_config(self):
        names = ("num_heads", "dff", "key_dim", "dropout", "attention_dropout", "norm_first")
        config = {n: getattr(self, n) for n in names}
        config["activation"] = keras.activations.serialize(self.activation)
        return {**super().get_config(), **config}
