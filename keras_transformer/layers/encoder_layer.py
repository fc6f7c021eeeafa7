"""One layer of the Transformer encoder (section 3.1 of the paper): two blocks, top-down."""

import keras

from keras_transformer.layers._layout import check_weights_layout, weights_layout_config
from keras_transformer.layers._nested import ShowsSublayers
from keras_transformer.layers.attention_blocks import SelfAttention
from keras_transformer.layers.feed_forward_block import FeedForwardBlock


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderLayer(ShowsSublayers, keras.layers.Layer):
    r"""A global self-attention block, then a feed-forward block.

    Section 3.1: every position attends to every real position, before and after it
    (`SelfAttention`), then the same feed-forward network runs at every position
    (`FeedForwardBlock`). Each block wraps its sub-layer in dropout (section 5.4) and `AddNorm`:
    post-LN (the paper) $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$, or pre-LN
    (`norm_first=True`) $x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$.
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

    def build(self, inputs_shape):
        common = {
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "dtype": self.dtype_policy,
        }
        self.self_attention = SelfAttention(
            self.num_heads,
            key_dim=self.key_dim,
            attention_dropout=self.attention_dropout,
            name="self_attention",
            **common,
        )
        self.self_attention.build(inputs_shape)
        self.feed_forward = FeedForwardBlock(
            self.dff, self.activation, name="feed_forward", **common
        )
        self.feed_forward.build(inputs_shape)

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False):
        x = self.self_attention(
            inputs,  # (batch, seq_len, d_model)
            padding_mask=padding_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            x, scores = x  # scores: (batch, num_heads, seq_len, seq_len)
        x = self.feed_forward(x, training=training)  # (batch, seq_len, d_model)
        return (x, scores) if return_attention_scores else x

    def get_config(self):
        names = ("num_heads", "dff", "key_dim", "dropout", "attention_dropout", "norm_first")
        config = {n: getattr(self, n) for n in names}
        config["activation"] = keras.activations.serialize(self.activation)
        return {**super().get_config(), **config, **weights_layout_config()}

    @classmethod
    def from_config(cls, config):
        return super().from_config(check_weights_layout(cls.__name__, config))
