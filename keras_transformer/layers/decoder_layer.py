"""One layer of the Transformer decoder (section 3.1 of the paper), readable top-down.

Attention lives in attention.py, the feed-forward network in feed_forward.py; the residual
connections and layer normalizations are written out in `DecoderLayer.call`.
"""

import keras
from keras import ops

from keras_transformer.layers.attention import attention_for
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderLayer(keras.layers.Layer):
    r"""Causal self-attention, cross-attention to the encoder, feed-forward; each with a residual.

    Section 3.1: target position `t` sees targets `<= t` (section 3.2.3) and the whole source.
    Each sub-layer's output goes through dropout and is added to its input, normalized after the
    sum (post-LN, the paper) or before the sub-layer (`norm_first=True`, pre-LN).
    `use_cross_attention=False` gives the block of a decoder-only model.
    Masking: `padding_mask` hides padded target keys, `context_padding_mask` padded sources.

    Args:
        num_heads, dff: attention heads; inner size of the feed-forward network.
        key_dim: size per head; default `d_model // num_heads` (checked when built).
        dropout, attention_dropout: residual dropout (section 5.4), on attention weights.
        activation, norm_first: feed-forward activation; pre-LN instead of post-LN.
        use_cross_attention: include the cross-attention sub-layer (`cross_attention`).

    Call arguments:
        inputs: target stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`; `None` with a cache or none.
        padding_mask: optional bool `(batch, kv_len)` of the target keys.
        context_padding_mask, training: optional bool `(batch, src_len)`; dropout active.
        return_attention_scores: also return `{"self_attention": ..., "cross_attention": ...}`.
        self_attention_cache: `(batch, 2, max_len, num_heads, key_dim)`, step by step.
        cross_attention_cache, cache_update_index: from `cross_attention.compute_cache(context)`;
            absolute position of `inputs[:, 0]` in the self-attention cache.

    Returns:
        `(batch, tgt_len, d_model)`, plus the scores dict and/or the updated cache (last).

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

    def _sublayer(self, name, d_model):
        """Sub-layer `name` (an attention, or "feed_forward"), its LayerNorm and its dropout."""
        dtype = self.dtype_policy
        if name == "feed_forward":
            layer = FeedForward(self.dff, self.activation, dtype=dtype, name=name)
        else:
            layer = attention_for(
                d_model,
                self.num_heads,
                self.key_dim,
                dropout=self.attention_dropout,
                dtype=dtype,
                name=name,
            )
        norm = keras.layers.LayerNormalization(epsilon=1e-6, dtype=dtype, name=f"{name}_norm")
        dropout = keras.layers.Dropout(self.dropout, dtype=dtype, name=f"{name}_dropout")
        return layer, norm, dropout

    def build(self, inputs_shape, context_shape=None):
        d_model = inputs_shape[-1]
        # Sub-layer 1: causal self-attention, its LayerNorm and its residual dropout.
        self.self_attention, self.self_attention_norm, self.self_attention_dropout = self._sublayer(
            "self_attention", d_model
        )
        self.self_attention.build(inputs_shape, inputs_shape)
        self.self_attention_norm.build(inputs_shape)
        # Sub-layer 2: cross-attention to the encoder output (encoder-decoder models only).
        if self.use_cross_attention:
            self.cross_attention, self.cross_attention_norm, self.cross_attention_dropout = (
                self._sublayer("cross_attention", d_model)
            )
            self.cross_attention.build(inputs_shape, context_shape or inputs_shape)
            self.cross_attention_norm.build(inputs_shape)
        # Sub-layer 3: the position-wise feed-forward network.
        self.feed_forward, self.feed_forward_norm, self.feed_forward_dropout = self._sublayer(
            "feed_forward", d_model
        )
        self.feed_forward.build(inputs_shape)
        self.feed_forward_norm.build(inputs_shape)

    def call(
        self,
        inputs,
        context=None,
        padding_mask=None,
        context_padding_mask=None,
        training=None,
        return_attention_scores=False,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
    ):
        if self.use_cross_attention and context is None and cross_attention_cache is None:
            raise ValueError(
                f"{self.name}: cross-attention needs `context` (the encoder output) "
                "or `cross_attention_cache`; received neither. Pass the encoder "
                "output, or build the layer with use_cross_attention=False."
            )
        scores = {}

        # Causal self-attention sub-layer (with a cache: only the new positions, `inputs`)
        residual = x = inputs  # (batch, tgt_len, d_model)
        if self.norm_first:
            x = self.self_attention_norm(x)
        x, *extra = _as_tuple(
            self.self_attention(
                x,
                x,
                attention_mask=_key_mask(padding_mask),
                use_causal_mask=True,
                return_attention_scores=return_attention_scores,
                training=training,
                cache=self_attention_cache,
                cache_update_index=cache_update_index,
            )
        )  # extra: [scores (batch, num_heads, tgt_len, kv_len)], [updated cache]
        if return_attention_scores:
            scores["self_attention"] = extra[0]
        x = residual + self.self_attention_dropout(x, training=training)
        if not self.norm_first:
            x = self.self_attention_norm(x)

        # Cross-attention sub-layer: queries from the decoder, keys and values from the source
        if self.use_cross_attention:
            residual = x
            if self.norm_first:
                x = self.cross_attention_norm(x)
            x, *cross_extra = _as_tuple(
                self.cross_attention(
                    x,
                    x if context is None else context,  # unused with a cache
                    attention_mask=_key_mask(context_padding_mask),
                    return_attention_scores=return_attention_scores,
                    training=training,
                    cache=cross_attention_cache,  # read only: cache_update_index None
                )
            )
            if return_attention_scores:
                scores["cross_attention"] = cross_extra[0]  # (batch, heads, tgt_len, src_len)
            x = residual + self.cross_attention_dropout(x, training=training)
            if not self.norm_first:
                x = self.cross_attention_norm(x)

        # Feed-forward sub-layer
        residual = x
        if self.norm_first:
            x = self.feed_forward_norm(x)
        x = self.feed_forward(x)  # (batch, tgt_len, d_model)
        x = residual + self.feed_forward_dropout(x, training=training)
        if not self.norm_first:
            x = self.feed_forward_norm(x)

        outputs = (x,)
        outputs += (scores,) if return_attention_scores else ()
        outputs += () if self_attention_cache is None else (extra[-1],)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_config(self):
        names = ("num_heads", "dff", "key_dim", "dropout", "attention_dropout", "norm_first")
        config = {n: getattr(self, n) for n in names}
        config["activation"] = keras.activations.serialize(self.activation)
        config["use_cross_attention"] = self.use_cross_attention
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "cross_attention" in config:  # saved before the flag was named use_cross_attention
            config["use_cross_attention"] = config.pop("cross_attention")
        return super().from_config(config)


def _key_mask(padding_mask):
    """Bool `(batch, kv_len)` of real keys -> `(batch, 1, kv_len)`, for every query."""
    return None if padding_mask is None else ops.expand_dims(padding_mask, 1)


def _as_tuple(results) -> tuple:
    return results if isinstance(results, tuple) else (results,)
