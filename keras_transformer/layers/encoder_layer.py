"""One layer of the Transformer encoder (section 3.1 of the paper)."""

import keras

from keras_transformer._validation import check_positive_int
from keras_transformer.layers.attention_blocks import SelfAttention
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderLayer(keras.layers.Layer):
    """Global self-attention followed by a feed-forward network.

    Section 3.1: every position attends to every real position, before and after it.
    Masking: padded positions (`padding_mask` False) are never attended to.

    Args:
        num_heads, dff: attention heads; inner size of the feed-forward network.
        key_dim: size per head; default `d_model // num_heads`.
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
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
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
        check_positive_int("num_heads", num_heads)
        check_positive_int("dff", dff)
        self.num_heads, self.dff, self.key_dim = num_heads, dff, key_dim
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.supports_masking = True

    def _attention_kwargs(self):
        names = ("num_heads", "key_dim", "attention_dropout", "dropout", "norm_first")
        return {**{n: getattr(self, n) for n in names}, "dtype": self.dtype_policy}

    def _build_feed_forward(self, input_shape):
        kwargs = {n: getattr(self, n) for n in ("dff", "dropout", "activation", "norm_first")}
        self.feed_forward = FeedForward(**kwargs, dtype=self.dtype_policy, name="feed_forward")
        self.feed_forward.build(input_shape)

    def build(self, input_shape):
        self.self_attention = SelfAttention(**self._attention_kwargs(), name="self_attention")
        self.self_attention.build(input_shape)
        self._build_feed_forward(input_shape)

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False):
        scores = return_attention_scores
        x = self.self_attention(
            inputs, padding_mask, training=training, return_attention_scores=scores
        )
        if scores:
            return self.feed_forward(x[0], training=training), x[1]
        return self.feed_forward(x, training=training)

    def get_config(self):
        names = ("num_heads", "dff", "key_dim", "dropout", "attention_dropout", "norm_first")
        config = {n: getattr(self, n) for n in names}
        config["activation"] = keras.activations.serialize(self.activation)
        return {**super().get_config(), **config}
