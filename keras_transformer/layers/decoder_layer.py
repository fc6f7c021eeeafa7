"""One layer of the Transformer decoder (section 3.1 of the paper)."""

from __future__ import annotations

import keras

from keras_transformer.layers.attention_blocks import CrossAttention, SelfAttention
from keras_transformer.layers.encoder_layer import EncoderLayer
from keras_transformer.layers.feed_forward import FeedForward


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderLayer(EncoderLayer):
    """Causal self-attention, cross-attention to the encoder, feed-forward.

    The causal self-attention lets target position `t` see only target
    positions `<= t`; the cross-attention lets it read the whole source
    sentence through the encoder output; the feed-forward network then
    transforms each position. Without a `context` and with
    `cross_attention=False` this is the block of a decoder-only model.

    Masking: `padding_mask` (bool `(batch, tgt_len)`) masks padded target
    keys; `context_padding_mask` (bool `(batch, src_len)`) masks padded source
    positions in the cross-attention.

    Args:
        num_heads, dff, key_dim, dropout, attention_dropout, activation,
        norm_first: as in `EncoderLayer`.
        cross_attention: include the cross-attention sub-layer.

    Call arguments:
        inputs: target stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`, or `None` when
            `cross_attention_cache` is given or there is no cross-attention.
        padding_mask: optional bool `(batch, kv_len)` of the target keys.
        context_padding_mask: optional bool `(batch, src_len)`.
        training: whether dropout is active.
        return_attention_scores: also return a dict with `"self_attention"`
            and (if present) `"cross_attention"` weights.
        self_attention_cache: `(batch, 2, max_len, num_heads, key_dim)` for
            step-by-step decoding, written at `cache_update_index`.
        cross_attention_cache: from `cross_attention.compute_cache(context)`.
        cache_update_index: absolute position of `inputs[:, 0]` in the cache.

    Returns:
        `(batch, tgt_len, d_model)`; with scores, `(output, scores_dict)`; with
        a self-attention cache, the updated cache is appended last.

    Example:

    >>> import numpy as np
    >>> layer = DecoderLayer(num_heads=2, dff=16)
    >>> x = np.random.rand(2, 4, 8).astype("float32")
    >>> context = np.random.rand(2, 6, 8).astype("float32")
    >>> tuple(layer(x, context).shape)
    (2, 4, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
    """

    def __init__(self, num_heads: int, dff: int, cross_attention: bool = True, **kwargs):
        super().__init__(num_heads, dff, **kwargs)
        self.cross_attention = cross_attention

    def build(self, inputs_shape, context_shape=None):
        input_shape = inputs_shape
        self.self_attention = SelfAttention(
            **self._attention_kwargs(), causal=True, name="self_attention"
        )
        self.self_attention.build(input_shape)
        if self.cross_attention:
            self.cross_attention_block = CrossAttention(
                **self._attention_kwargs(), name="cross_attention"
            )
            self.cross_attention_block.build(input_shape, context_shape or input_shape)
        self.feed_forward = FeedForward(
            self.dff, activation=self.activation, **self._sublayer_kwargs(), name="feed_forward"
        )
        self.feed_forward.build(input_shape)

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
        scores = {}
        results = self.self_attention(
            inputs,
            padding_mask=padding_mask,
            training=training,
            return_attention_scores=return_attention_scores,
            cache=self_attention_cache,
            cache_update_index=cache_update_index,
        )
        results = results if isinstance(results, tuple) else (results,)
        x = results[0]
        if return_attention_scores:
            scores["self_attention"] = results[1]
        if self.cross_attention:
            if context is None and cross_attention_cache is None:
                raise ValueError(
                    f"{self.name}: cross-attention needs `context` (the encoder output) "
                    "or `cross_attention_cache`; received neither. Pass the encoder "
                    "output, or build the layer with cross_attention=False."
                )
            x = self.cross_attention_block(
                x,
                context,
                context_padding_mask=context_padding_mask,
                training=training,
                return_attention_scores=return_attention_scores,
                cache=cross_attention_cache,
            )
            if return_attention_scores:
                x, scores["cross_attention"] = x
        x = self.feed_forward(x, training=training)
        outputs = (x,)
        if return_attention_scores:
            outputs += (scores,)
        if self_attention_cache is not None:
            outputs += (results[-1],)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_config(self):
        config = super().get_config()
        config.update({"cross_attention": self.cross_attention})
        return config
