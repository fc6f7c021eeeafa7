"""One layer of the Transformer encoder (section 3.1 of the paper)."""

from __future__ import annotations

import keras

from keras_transformer._validation import check_positive_int
from keras_transformer.layers.attention_blocks import SelfAttention
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderLayer(keras.layers.Layer):
    """Global self-attention followed by a feed-forward network.

    Each sub-layer has dropout, a residual connection and layer normalization.
    Every position attends to every real position of the sentence, before and
    after it, so the representation of a word can depend on words that come
    later (what "it" refers to may be decided by the last word).

    Masking: pass `padding_mask` (bool `(batch, seq_len)`); padded positions
    are never attended to.

    Args:
        num_heads: attention heads.
        dff: inner size of the feed-forward network.
        key_dim: size per head; default `d_model // num_heads`.
        dropout: residual dropout (section 5.4).
        attention_dropout: dropout on attention weights.
        activation: feed-forward activation.
        norm_first: pre-LN instead of the paper's post-LN.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        padding_mask: optional bool `(batch, seq_len)`.
        training: whether dropout is active.
        return_attention_scores: also return the self-attention weights
            `(batch, num_heads, seq_len, seq_len)`.

    Returns:
        `(batch, seq_len, d_model)` (and the scores if asked).

    Example:

    >>> import numpy as np
    >>> layer = EncoderLayer(num_heads=2, dff=16)
    >>> tuple(layer(np.random.rand(2, 5, 8).astype("float32")).shape)
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
        self.num_heads = num_heads
        self.dff = dff
        self.key_dim = key_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.supports_masking = True

    def _sublayer_kwargs(self):
        return {"dropout": self.dropout, "norm_first": self.norm_first, "dtype": self.dtype_policy}

    def _attention_kwargs(self):
        return {
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "attention_dropout": self.attention_dropout,
            **self._sublayer_kwargs(),
        }

    def build(self, input_shape):
        self.self_attention = SelfAttention(**self._attention_kwargs(), name="self_attention")
        self.self_attention.build(input_shape)
        self.feed_forward = FeedForward(
            self.dff, activation=self.activation, **self._sublayer_kwargs(), name="feed_forward"
        )
        self.feed_forward.build(input_shape)

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False):
        x = self.self_attention(
            inputs,
            padding_mask=padding_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            x, scores = x
            return self.feed_forward(x, training=training), scores
        return self.feed_forward(x, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "dff": self.dff,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation": keras.activations.serialize(self.activation),
                "norm_first": self.norm_first,
            }
        )
        return config
