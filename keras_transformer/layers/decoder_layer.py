"""One layer of the Transformer decoder (section 3.1 of the paper): three blocks, top-down."""

import keras

from keras_transformer.layers._layout import check_weights_layout, weights_layout_config
from keras_transformer.layers._nested import ShowsSublayers
from keras_transformer.layers.attention_blocks import CrossAttention, SelfAttention
from keras_transformer.layers.feed_forward_block import FeedForwardBlock


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderLayer(ShowsSublayers, keras.layers.Layer):
    r"""A causal self-attention block, a cross-attention block, then a feed-forward block.

    Section 3.1: target position `t` sees targets `<= t` (section 3.2.3), then reads the whole
    source through cross-attention (queries from the self-attention block's output, keys and
    values from the encoder output), then runs the feed-forward network. Each block wraps its
    sub-layer in dropout and `AddNorm`, post-LN (the paper) or pre-LN (`norm_first=True`).
    `use_cross_attention=False` gives the layer of a decoder-only model.
    Masking: `padding_mask` hides padded target keys, `context_padding_mask` padded sources.

    Args:
        num_heads, dff: attention heads; inner size of the feed-forward network.
        key_dim: size per head; default `d_model // num_heads` (checked when built).
        dropout, attention_dropout: residual dropout (section 5.4), on attention weights.
        activation, norm_first: feed-forward activation; pre-LN instead of post-LN.
        use_cross_attention: include the cross-attention block (`cross_attention`).

    Call arguments:
        inputs: target stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`; `None` without cross-attention.
        padding_mask: optional bool `(batch, tgt_len)` of the target keys.
        context_padding_mask, training: optional bool `(batch, src_len)`; dropout active.
        return_attention_scores: also return `{"self_attention": ..., "cross_attention": ...}`.

    Returns:
        `(batch, tgt_len, d_model)`, plus the scores dict if asked.

    Example:
    >>> import numpy as np
    >>> x, context = np.random.rand(2, 4, 8), np.random.rand(2, 6, 8)
    >>> tuple(DecoderLayer(num_heads=2, dff=16)(x, context).shape)
    (2, 4, 8)

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
        use_cross_attention: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads, self.dff, self.key_dim = num_heads, dff, key_dim
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first, self.use_cross_attention = norm_first, use_cross_attention
        self.supports_masking = True

    def build(self, inputs_shape, context_shape=None):
        common = {
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "dtype": self.dtype_policy,
        }
        attention = {"key_dim": self.key_dim, "attention_dropout": self.attention_dropout}
        self.self_attention = SelfAttention(
            self.num_heads, causal=True, name="self_attention", **attention, **common
        )
        self.self_attention.build(inputs_shape)
        if self.use_cross_attention:
            self.cross_attention = CrossAttention(
                self.num_heads, name="cross_attention", **attention, **common
            )
            self.cross_attention.build(inputs_shape, context_shape)
        self.feed_forward = FeedForwardBlock(
            self.dff, self.activation, name="feed_forward", **common
        )
        self.feed_forward.build(inputs_shape)

    def call(
        self,
        inputs,
        context=None,
        padding_mask=None,
        context_padding_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        self._check_context(context)
        scores = {}
        x = self.self_attention(
            inputs,  # (batch, tgt_len, d_model)
            padding_mask=padding_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            x, scores["self_attention"] = x  # (batch, num_heads, tgt_len, tgt_len)
        if self.use_cross_attention:
            x = self.cross_attention(
                x,  # queries: the self-attention block's output
                context,  # keys and values: the encoder output
                context_padding_mask=context_padding_mask,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            if return_attention_scores:
                x, scores["cross_attention"] = x  # (batch, num_heads, tgt_len, src_len)
        x = self.feed_forward(x, training=training)  # (batch, tgt_len, d_model)
        return (x, scores) if return_attention_scores else x

    def call_with_cache(
        self,
        inputs,
        self_attention_cache,
        cache_update_index,
        cross_attention_cache=None,
        context_padding_mask=None,
    ):
        """One decoding step with key/value caches (section 3.2.3's masking, O(1) new positions).

        Args:
            inputs: the new target positions `(batch, new_len, d_model)`, at absolute positions
                `cache_update_index, cache_update_index + 1, ...`.
            self_attention_cache: `(batch, 2, max_len, num_heads, key_dim)`: keys and values
                of the earlier positions; those of `inputs` are written into it.
            cross_attention_cache: `self.cross_attention.compute_cache(context)`.
            context_padding_mask: bool `(batch, src_len)`.

        Returns:
            `(outputs (batch, new_len, d_model), updated self_attention_cache)`.
        """
        if self.use_cross_attention and cross_attention_cache is None:
            raise ValueError(
                f"{self.name}: cross-attention needs `cross_attention_cache` "
                "(cross_attention.compute_cache(encoder_output)); received None."
            )
        x, cache = self.self_attention(
            inputs, cache=self_attention_cache, cache_update_index=cache_update_index
        )
        if self.use_cross_attention:
            x = self.cross_attention(
                x, context_padding_mask=context_padding_mask, cache=cross_attention_cache
            )
        return self.feed_forward(x), cache

    def _check_context(self, context) -> None:
        if self.use_cross_attention and context is None:
            raise ValueError(
                f"{self.name}: cross-attention needs `context` (the encoder output); received "
                "None. Pass the encoder output, or build the layer with use_cross_attention=False."
            )

    def get_config(self):
        names = ("num_heads", "dff", "key_dim", "dropout", "attention_dropout", "norm_first")
        config = {n: getattr(self, n) for n in names}
        config["activation"] = keras.activations.serialize(self.activation)
        config["use_cross_attention"] = self.use_cross_attention
        return {**super().get_config(), **config, **weights_layout_config()}

    @classmethod
    def from_config(cls, config):
        return super().from_config(check_weights_layout(cls.__name__, config))
